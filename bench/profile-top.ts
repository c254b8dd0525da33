// `node --import tsx bench/profile-top.ts <file.cpuprofile> [count]` — the functions with the most
// self time in a V8 CPU profile (what `--cpu-prof=<dir>` writes for every service process), with
// their share of the process's busy samples (`(idle)` left out: a profile spans the whole life of
// the process, start-up and quiet phases included). The quick way to read where a process spends its CPU
// before opening the profile in Chrome DevTools.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

export function topSelfTime(profile: CpuProfile, count: number): Array<{ name: string; share: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map<string, number>();
  for (const id of profile.samples) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    const where = frame.url === '' ? '' : ` ${basename(frame.url)}:${frame.lineNumber + 1}`;
    const name = `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${where}`;
    totals.set(name, (totals.get(name) ?? 0) + 1);
  }
  totals.delete('(idle)');
  const samples = Math.max(1, [...totals.values()].reduce((sum, hits) => sum + hits, 0));
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, hits]) => ({ name, share: Math.round((hits / samples) * 1000) / 10 }));
}

const [file, countText] = process.argv.slice(2);
if (file !== undefined) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  for (const entry of topSelfTime(profile, Number(countText ?? '15'))) process.stdout.write(`${String(entry.share).padStart(5)} %  ${entry.name}\n`);
}
