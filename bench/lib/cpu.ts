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

/**
 * The servers behind a Redis URL: the URL itself, or for `redis+cluster://h1:p1,h2:p2,…` (the
 * syntax REDIS_URL takes, docs/operations.md) one `redis://` URL per node listed.
 */
export function redisNodeUrls(url: string): string[] {
  const match = /^redis\+cluster:\/\/([^/]*)\/?$/.exec(url);
  if (match === null) return [url];
  return (match[1] ?? '').split(',').filter((node) => node !== '').map((node) => `redis://${node}`);
}

/** INFO `section` of every master behind `url` (a cluster's replicas would count replicated writes again). */
async function masterInfos(url: string, section: string): Promise<string[]> {
  const infos: string[] = [];
  for (const nodeUrl of redisNodeUrls(url)) {
    const client = new Redis(nodeUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
    try {
      await client.connect();
      const replication = await client.info('replication');
      if (/^role:master/m.test(replication)) infos.push(await client.info(section));
    } finally {
      client.disconnect();
    }
  }
  return infos;
}

/** Calls per Redis command so far (INFO commandstats, summed over a cluster's masters), or an empty map when it cannot be asked. */
export async function redisCommandCalls(url: string): Promise<Map<string, number>> {
  try {
    const calls = new Map<string, number>();
    for (const info of await masterInfos(url, 'commandstats')) {
      for (const match of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) calls.set(match[1] ?? '', (calls.get(match[1] ?? '') ?? 0) + Number(match[2]));
    }
    return calls;
  } catch {
    return new Map();
  }
}

/** Per-response calls of each command between two `redisCommandCalls` snapshots (two decimals). */
export function callsPerResponse(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, responses: number): Record<string, number> {
  const perResponse: Record<string, number> = {};
  if (responses <= 0) return perResponse;
  for (const [command, calls] of [...after].sort((a, b) => b[1] - a[1])) {
    const delta = calls - (before.get(command) ?? 0);
    // The snapshot's own INFO calls and rare housekeeping are noise, not per-request work.
    if (delta / responses >= 0.005) perResponse[command] = Math.round((delta / responses) * 100) / 100;
  }
  return perResponse;
}

/** Redis server CPU milliseconds (INFO cpu; summed over a cluster's masters), or null when it cannot be asked. */
export async function redisCpuMs(url: string): Promise<number | null> {
  try {
    let total = 0;
    for (const info of await masterInfos(url, 'cpu')) {
      const value = (name: string): number => Number(new RegExp(`^used_cpu_${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 'NaN');
      total += (value('sys') + value('user')) * 1000;
    }
    return Number.isFinite(total) ? total : null;
  } catch {
    return null;
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
