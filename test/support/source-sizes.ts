// The size rules of src/ as a pure check (issue 21, "done means"): no file over 600 lines, and no
// function over 100 lines unless a comment at its top says why it is long. Given one file's path
// and text, the findings, each naming file:line; reading src/ is the caller's, and synthetic texts
// check the checker itself (test/unit/source-sizes.test.ts).
//
// "A comment saying why" is checked mechanically by its wording: a comment in the function's
// leading comments (the JSDoc or `//` lines just above it) or in the first lines of its body that
// contains "long because". Any wording would do for a reader; one fixed phrase lets the check
// tell a reason from an unrelated comment.
import ts from 'typescript';

export const fileLinesMax = 600;
export const functionLinesMax = 100;
/** How many lines at the top of a long function's body may hold the why-comment. */
export const whyCommentFirstLines = 5;
export const whyPhrase = /long because/i;

export type SizeFinding =
  | { readonly kind: 'file'; readonly file: string; readonly lines: number }
  | { readonly kind: 'function'; readonly file: string; readonly line: number; readonly name: string; readonly lines: number };

export interface FunctionSize {
  readonly name: string;
  /** 1-based line of the function's first token (its name or `function`/`async`/parameters). */
  readonly line: number;
  readonly lines: number;
  readonly explained: boolean;
}

/** Lines as an editor counts them: a trailing newline does not open another line. */
export function lineCount(text: string): number {
  if (text.length === 0) return 0;
  const lines = text.split('\n').length;
  return text.endsWith('\n') ? lines - 1 : lines;
}

function isFunctionLike(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node)
    || ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node)
    || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node);
}

/** A readable name: the declaration's own, or the variable/property an expression is bound to. */
function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name != null) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return '(anonymous)';
}

/**
 * The node whose leading comments stand above the function: for `const f = () => …` and
 * `x: function () …` that is the statement or property, not the expression.
 */
function commentAnchor(node: ts.FunctionLikeDeclaration): ts.Node {
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent)) {
    const list = parent.parent;
    return ts.isVariableDeclarationList(list) && ts.isVariableStatement(list.parent) ? list.parent : parent;
  }
  if (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent;
  return node;
}

function commentsText(text: string, ranges: readonly ts.CommentRange[] | undefined): string {
  return (ranges ?? []).map((range) => text.slice(range.pos, range.end)).join('\n');
}

/** Whether the comment above the function, or one in the first lines of its body, says why it is long. */
function explainsLength(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): boolean {
  const text = source.text;
  const anchor = commentAnchor(node);
  if (whyPhrase.test(commentsText(text, ts.getLeadingCommentRanges(text, anchor.getFullStart())))) return true;
  const body = node.body;
  if (body == null) return false;
  const bodyLine = source.getLineAndCharacterOfPosition(body.getStart(source)).line;
  const lastLine = Math.min(bodyLine + whyCommentFirstLines, source.getLineStarts().length - 1);
  const head = text.slice(body.getStart(source), source.getLineStarts()[lastLine]);
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, head);
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    const isComment = kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia;
    if (isComment && whyPhrase.test(scanner.getTokenText())) return true;
  }
  return false;
}

/** Every function, method, accessor, constructor and arrow function of one file, nested ones too. */
export function functionSizes(file: string, text: string): FunctionSize[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const sizes: FunctionSize[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node) && node.body != null) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      sizes.push({ name: functionName(node, source), line: first + 1, lines: last - first + 1, explained: explainsLength(node, source) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sizes;
}

/** The findings of one file of src/: the file itself if too long, and each long function without a why. */
export function sourceSizeFindings(file: string, text: string): SizeFinding[] {
  const findings: SizeFinding[] = [];
  const lines = lineCount(text);
  if (lines > fileLinesMax) findings.push({ kind: 'file', file, lines });
  for (const size of functionSizes(file, text)) {
    if (size.lines > functionLinesMax && !size.explained) findings.push({ kind: 'function', file, line: size.line, name: size.name, lines: size.lines });
  }
  return findings;
}

export function describeSizeFinding(finding: SizeFinding): string {
  if (finding.kind === 'file') return `${finding.file}:1 has ${finding.lines} lines (at most ${fileLinesMax}): split it along its seams`;
  return `${finding.file}:${finding.line} ${finding.name} has ${finding.lines} lines (over ${functionLinesMax}) and no comment at its top saying why it is long ("… long because …")`;
}
