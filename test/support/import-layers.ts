// The import rules of src/ as a pure check: given every file's relative imports and the layers of
// import-layers.json, the findings (an import that runs up or across the layers, a directory no
// layer names, an import circle). Reading the files is the caller's; a synthetic graph checks
// the checker itself (test/unit/import-layers.test.ts).
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

export interface Layer {
  readonly dirs: readonly string[];
}

/** A source file (`src/...`, forward slashes) and the files it imports, resolved the same way. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

export type Finding =
  | { readonly kind: 'upward'; readonly from: string; readonly to: string; readonly fromLayer: number; readonly toLayer: number }
  | { readonly kind: 'sideways'; readonly from: string; readonly to: string; readonly layer: number }
  | { readonly kind: 'unlayered'; readonly file: string; readonly dir: string }
  | { readonly kind: 'circle'; readonly files: readonly string[] };

/** `src/main.ts` → `main`; `src/edge/routes/x.ts` → `edge`. */
export function directoryOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] !== 'src' || parts.length < 2) throw new Error(`not a file of src/: ${file}`);
  return parts.length === 2 ? (parts[1] ?? '').replace(/\.ts$/, '') : (parts[1] ?? '');
}

/**
 * The relative imports of one file's text (static, `export … from`, `import type`, dynamic and
 * `import('…')` types), resolved against the file's path. Packages and `node:` modules are left out.
 */
export function relativeImports(file: string, text: string): string[] {
  const found = ts.preProcessFile(text, true, true).importedFiles.map((entry) => entry.fileName);
  return found.filter((name) => name.startsWith('./') || name.startsWith('../')).map((name) => normalize(join(dirname(file), name)).split('\\').join('/'));
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
export function importCircles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: string[][] = [];
  let next = 0;
  // Iterative: a recursive walk would be bounded by the call stack, not by the graph.
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ readonly file: string; edge: number }> = [{ file: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next);
    next += 1;
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.get(frame.file) ?? [];
      if (frame.edge < targets.length) {
        const target = targets[frame.edge]!;
        frame.edge += 1;
        if (!graph.has(target)) continue;
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next);
          next += 1;
          stack.push(target);
          onStack.add(target);
          work.push({ file: target, edge: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.file, Math.min(low.get(frame.file)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(frame.file)!));
      if (low.get(frame.file) !== index.get(frame.file)) continue;
      const component: string[] = [];
      for (;;) {
        const member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
        if (member === frame.file) break;
      }
      const selfImport = component.length === 1 && (graph.get(frame.file) ?? []).includes(frame.file);
      if (component.length > 1 || selfImport) circles.push(component.sort());
    }
  }
  return circles;
}

/** Every finding of the graph against the layers; empty when the imports keep to the rules. */
export function checkImportLayers(graph: ImportGraph, layers: readonly Layer[]): Finding[] {
  const rankOf = new Map<string, number>();
  layers.forEach((layer, rank) => {
    for (const dir of layer.dirs) rankOf.set(dir, rank);
  });
  const findings: Finding[] = [];
  for (const [from, targets] of graph) {
    const fromDir = directoryOf(from);
    const fromLayer = rankOf.get(fromDir);
    if (fromLayer === undefined) {
      findings.push({ kind: 'unlayered', file: from, dir: fromDir });
      continue;
    }
    for (const to of targets) {
      if (!to.startsWith('src/')) continue; // a data file beside src/ (proto, JSON): no layer
      const toDir = directoryOf(to);
      if (toDir === fromDir) continue;
      const toLayer = rankOf.get(toDir);
      if (toLayer === undefined) continue; // reported once, as the target's own file
      if (toLayer > fromLayer) findings.push({ kind: 'upward', from, to, fromLayer, toLayer });
      else if (toLayer === fromLayer) findings.push({ kind: 'sideways', from, to, layer: fromLayer });
    }
  }
  for (const files of importCircles(graph)) findings.push({ kind: 'circle', files });
  return findings;
}

/** One line per finding, for an assertion message a reader can act on. */
export function describeFinding(finding: Finding): string {
  switch (finding.kind) {
    case 'upward':
      return `${finding.from} (layer ${finding.fromLayer}) imports ${finding.to} (layer ${finding.toLayer}, higher)`;
    case 'sideways':
      return `${finding.from} imports ${finding.to}, another directory of its own layer ${finding.layer}`;
    case 'unlayered':
      return `${finding.file}: src/${finding.dir} is in no layer of import-layers.json`;
    case 'circle':
      return `import circle: ${finding.files.join(' -> ')}`;
  }
}
