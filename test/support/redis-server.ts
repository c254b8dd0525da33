// A private redis-server for one test file: started on a free port bound to 127.0.0.1 only, with no
// persistence (`--save "" --appendonly no`), and stopped by its PID. Tests never touch the Redis on
// port 6379. Every wait here is bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort, stopChild } from './processes.ts';

export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  /** The server's PID (tests freeze it with SIGSTOP to play an unreachable Redis); a new one after `restart`. */
  readonly pid: number;
  /**
   * Stops the server (SIGTERM: it writes its AOF first, when run with `--appendonly yes`) but keeps
   * its port and directory: clients see connections refused until `restart`.
   */
  halt(): Promise<void>;
  /** Kills the server with SIGKILL (a crash: no shutdown write) and waits for it to exit; `restart` brings it back. */
  crash(): Promise<void>;
  /** Starts the server again after `halt`, on the same port with the same directory (and data, with AOF). */
  restart(): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL after a bound) and removes its working directory. */
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes', '--appendfsync', 'everysec']`. */
  readonly extraArgs?: readonly string[];
  readonly startTimeoutMs?: number;
}

const startTimeoutMsDefault = 10_000;
const stopTimeoutMs = 5_000;
const startAttemptsMax = 3;
const stderrBytesMax = 8_192;


/** Resolves once `PING` is answered with `+PONG` on the port, or rejects after the deadline. */
async function waitForPong(port: number, child: ChildProcess, deadlineMs: number): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`redis-server exited early (code ${String(child.exitCode)})`);
    }
    if (await pingOnce(port)) return;
    if (Date.now() > deadlineMs) throw new Error(`redis-server on port ${port} did not answer PING in time`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let answer = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}


interface Spawned {
  readonly child: ChildProcess;
  stderr(): string;
}

function spawnServer(port: number, dir: string, options: StartRedisOptions): Spawned {
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--save', '',
    '--appendonly', 'no',
    '--dir', dir,
    '--daemonize', 'no',
    '--loglevel', 'warning',
    ...(options.extraArgs ?? []),
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < stderrBytesMax) stderr += chunk.toString('utf8');
  });
  return { child, stderr: () => stderr };
}

/** Waits for the spawned server's PONG (bounded); on failure stops it and names its stderr. */
async function untilServing(spawned: Spawned, port: number, options: StartRedisOptions): Promise<void> {
  const spawnFailed = new Promise<never>((_, reject) => spawned.child.once('error', reject));
  spawnFailed.catch(() => undefined);
  try {
    const deadlineMs = Date.now() + (options.startTimeoutMs ?? startTimeoutMsDefault);
    await Promise.race([waitForPong(port, spawned.child, deadlineMs), spawnFailed]);
  } catch (error) {
    await stopChild(spawned.child, stopTimeoutMs);
    const detail = spawned.stderr().trim() === '' ? '' : `: ${spawned.stderr().trim()}`;
    throw new Error(`could not start redis-server${detail}`, { cause: error });
  }
}

async function startOnce(options: StartRedisOptions): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'test-redis-'));
  let spawned = spawnServer(port, dir, options);
  try {
    await untilServing(spawned, port, options);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  // A test runner that dies without calling stop() must not leave the server behind.
  const onExit = (): void => {
    spawned.child.kill('SIGKILL');
  };
  process.once('exit', onExit);
  let stopped: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return spawned.child.pid ?? -1;
    },
    halt: () => stopChild(spawned.child, stopTimeoutMs),
    async crash() {
      const { child } = spawned;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    async restart() {
      if (stopped !== undefined) throw new Error('redis-server was stopped for good');
      await stopChild(spawned.child, stopTimeoutMs);
      spawned = spawnServer(port, dir, options);
      await untilServing(spawned, port, options);
    },
    stop: async () => {
      stopped ??= stopChild(spawned.child, stopTimeoutMs)
        .then(() => rmSync(dir, { recursive: true, force: true }))
        .finally(() => process.off('exit', onExit));
      return stopped;
    },
  };
}

/** Starts a private redis-server on a free port; retries when the port was taken meanwhile. */
export async function startRedis(options: StartRedisOptions = {}): Promise<PrivateRedis> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= startAttemptsMax; attempt += 1) {
    try {
      return await startOnce(options);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError instanceof Error ? lastError : new Error('could not start redis-server');
}

/** A fresh random key prefix, so tests sharing one server never see each other's keys. */
export function randomKeyPrefix(label = 't'): string {
  return `${label}-${randomBytes(6).toString('hex')}:`;
}
