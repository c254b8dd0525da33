// Files that start a whole fleet of processes (the chaos run, the rolling restart) check timings
// of real processes: readiness within a lease round, a stop within the grace period. On two
// cores, with a second `npm test` beside this one, they starved and overran. Such a file says so
// in a comment line of its own:
//   // test runner: alone
// and then runs with no test file of ANOTHER run on this machine beside it (its own run's files go
// on: one run alone kept it green; a second one beside it starved it). It is a readers-writer lock
// kept in the file system, machine-wide:
// - an "alone" file (the writer) creates the lock directory (atomic: one writer at a time), then
//   waits until no ordinary file of another run is registered as running;
// - an ordinary file (a reader) registers first (an entry in the readers directory), then looks at
//   the lock; if another run holds it, it withdraws, waits for the lock to be free and tries again.
// Whichever comes first, the other sees it. Entries name their runner's pid: those of a dead
// runner are stale and removed, so a killed runner cannot block the next one.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function runsAlone(text: string): boolean {
  return /^\/\/ test runner: alone$/m.test(text);
}

/**
 * Fixed, not under TMPDIR: the runner gives each file its own TMPDIR, and the lock is machine-wide.
 * TEST_ALONE_LOCK names another (the runner's own test uses a private one).
 */
export const defaultLockPath = process.env.TEST_ALONE_LOCK ?? join('/tmp', `payments-test-alone-${process.getuid?.() ?? 0}.lock`);
const pollMs = 200;
/** A lock directory whose owner was never written (its runner died between the two steps). */
const ownerlessStaleMs = 10_000;

const readersOf = (lockPath: string): string => `${lockPath}.readers`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ownerOf(lockPath: string): number | null {
  try {
    const owner = Number(readFileSync(join(lockPath, 'owner'), 'utf8'));
    return Number.isFinite(owner) && owner > 0 ? owner : null;
  } catch {
    return null;
  }
}

function stale(lockPath: string, owner: number | null): boolean {
  if (owner !== null) return !alive(owner);
  try {
    return Date.now() - statSync(lockPath).mtimeMs > ownerlessStaleMs;
  } catch {
    return false;
  }
}

/** Held by a live runner other than `self`; a stale lock is removed on the way. */
function heldByOther(lockPath: string, self: number): boolean {
  if (!existsSync(lockPath)) return false;
  const owner = ownerOf(lockPath);
  if (owner === self) return false;
  if (stale(lockPath, owner)) {
    rmSync(lockPath, { recursive: true, force: true });
    return false;
  }
  return true;
}

/** Ordinary files of other live runners registered as running (stale entries are removed). */
function otherReaders(lockPath: string, self: number): string[] {
  const dir = readersOf(lockPath);
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.filter((entry) => {
    const pid = Number(entry.split('-')[0]);
    if (pid === self) return false;
    if (Number.isFinite(pid) && alive(pid)) return true;
    rmSync(join(dir, entry), { force: true });
    return false;
  });
}

/**
 * Registers an ordinary file of this run as running, once no other run holds the lock; the
 * returned function unregisters it.
 */
export async function enterTogether(name: string, lockPath = defaultLockPath, self = process.pid): Promise<() => void> {
  const entry = join(readersOf(lockPath), `${self}-${name}`);
  mkdirSync(readersOf(lockPath), { recursive: true });
  for (;;) {
    writeFileSync(entry, '');
    if (!heldByOther(lockPath, self)) return () => rmSync(entry, { force: true });
    rmSync(entry, { force: true });
    while (heldByOther(lockPath, self)) await sleep(pollMs);
  }
}

/** Takes the lock, then waits for other runs' ordinary files to finish; the returned function gives it back. */
export async function takeAloneLock(lockPath = defaultLockPath, self = process.pid): Promise<() => void> {
  for (;;) {
    try {
      mkdirSync(lockPath);
      writeFileSync(join(lockPath, 'owner'), String(self));
      break;
    } catch {
      const owner = ownerOf(lockPath);
      if (owner !== self && stale(lockPath, owner)) rmSync(lockPath, { recursive: true, force: true });
      else await sleep(pollMs);
    }
  }
  while (otherReaders(lockPath, self).length > 0) await sleep(pollMs);
  return () => {
    if (ownerOf(lockPath) === self) rmSync(lockPath, { recursive: true, force: true });
  };
}

/** An interrupted run's own registrations (its ordinary files were killed mid-run): removed, so none is left behind. */
export function leaveAll(lockPath = defaultLockPath, self = process.pid): void {
  try {
    for (const entry of readdirSync(readersOf(lockPath))) {
      if (Number(entry.split('-')[0]) === self) rmSync(join(readersOf(lockPath), entry), { force: true });
    }
  } catch {
    // No readers directory: nothing of ours to remove.
  }
}
