// CPU time each process spent during a measured point, divided by the responses: microseconds of
// CPU per request, per process (edge, shard, worker, Redis …). Unlike throughput, this barely
// moves when other work shares the machine, so it says where the cost is even on a busy host.
// Linux only (/proc/<pid>/stat); elsewhere the numbers are omitted.
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on Linux). */
const ticksPerSecond = 100;

/** User + system CPU milliseconds of one process (all its threads), or null when unreadable. */
export function processCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) may contain spaces; fields after the closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const userTicks = Number(fields[11]);
    const systemTicks = Number(fields[12]);
    if (!Number.isFinite(userTicks) || !Number.isFinite(systemTicks)) return null;
    return ((userTicks + systemTicks) * 1000) / ticksPerSecond;
  } catch {
    return null;
  }
}

/** Redis server CPU milliseconds (INFO cpu), or null when it cannot be asked. */
export async function redisCpuMs(url: string): Promise<number | null> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await client.connect();
    const info = await client.info('cpu');
    const value = (name: string): number => Number(new RegExp(`^used_cpu_${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 'NaN');
    const total = (value('sys') + value('user')) * 1000;
    return Number.isFinite(total) ? total : null;
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}

export interface CpuSubject {
  readonly name: string;
  readonly pid?: number;
  readonly redisUrl?: string;
  /** Every process with this command name (e.g. `postgres`: the server and its backends). */
  readonly command?: string;
}

/** Summed CPU milliseconds of every process whose /proc/<pid>/comm is `command`. */
export function commandCpuMs(command: string): number | null {
  let total = 0;
  let found = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let name: string;
    try {
      name = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (name !== command) continue;
    const cpu = processCpuMs(Number(entry));
    if (cpu === null) continue;
    total += cpu;
    found = true;
  }
  return found ? total : null;
}

export type CpuSnapshot = ReadonlyMap<string, number | null>;

export async function cpuSnapshot(subjects: readonly CpuSubject[]): Promise<CpuSnapshot> {
  const snapshot = new Map<string, number | null>();
  for (const subject of subjects) {
    if (subject.pid !== undefined) snapshot.set(subject.name, processCpuMs(subject.pid));
    else if (subject.redisUrl !== undefined) snapshot.set(subject.name, await redisCpuMs(subject.redisUrl));
    else if (subject.command !== undefined) snapshot.set(subject.name, commandCpuMs(subject.command));
  }
  return snapshot;
}

/** CPU microseconds per response for each subject (null when it could not be read). */
export function cpuPerResponseUs(before: CpuSnapshot, after: CpuSnapshot, responses: number): Record<string, number | null> {
  const result: Record<string, number | null> = {};
  for (const [name, start] of before) {
    const end = after.get(name);
    result[name] = start === null || end === null || end === undefined || responses <= 0 ? null : Math.round(((end - start) * 1000) / responses);
  }
  return result;
}
