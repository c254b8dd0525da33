// Reads the process table (Linux /proc) to find what a test file left running: members of its
// process group after it exited, and any process that carries this run's marker in its environment
// (it escaped the group with setsid or `detached`). Elsewhere /proc is absent and both find nothing.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  readonly pid: number;
  readonly command: string;
}

function pids(): number[] {
  try {
    return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);
  } catch {
    return [];
  }
}

/**
 * The process group of `pid` (the 5th field of /proc/<pid>/stat; fields are counted after the
 * parenthesised name, which may hold spaces), or null when it is gone or a zombie (it runs nothing).
 */
function groupOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return state === 'Z' ? null : Number(group);
  } catch {
    return null;
  }
}

function commandOf(pid: number): string {
  try {
    const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((part) => part !== '').join(' ');
    return line.length > 200 ? `${line.slice(0, 200)}…` : line;
  } catch {
    return '?';
  }
}

function environmentHas(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(entry);
  } catch {
    return false; // gone, or another user's process: not ours either way
  }
}

/** Live processes in process group `group`. */
export function processesInGroup(group: number): ProcessInfo[] {
  return pids().filter((pid) => groupOf(pid) === group).map((pid) => ({ pid, command: commandOf(pid) }));
}

/** Live processes whose environment holds `entry` exactly (`NAME=value`), except `exceptPid`. */
export function processesWithEnvironment(entry: string, exceptPid: number): ProcessInfo[] {
  return pids().filter((pid) => pid !== exceptPid && environmentHas(pid, entry)).map((pid) => ({ pid, command: commandOf(pid) }));
}

/** Signals a whole process group; a group that is already gone is not an error. */
export function signalGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal);
  } catch {
    // ESRCH: nothing left in the group
  }
}

export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: already gone
  }
}
