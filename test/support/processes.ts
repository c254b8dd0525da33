// Small process helpers for test harnesses that start real servers (redis-server, anvil, …).
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';

/** Asks the OS for a free port. Another process may grab it before the server binds; callers retry. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not determine a free port'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}

/**
 * SIGTERM, then SIGKILL if the child has not exited within `stopTimeoutMs`. Then its pipes are
 * closed on our side: a grandchild that inherited them (tsx's esbuild service, say) would otherwise
 * keep them open after the child's exit, and this test process would never exit.
 */
export async function stopChild(child: ChildProcess, stopTimeoutMs = 5_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), stopTimeoutMs);
    });
    const late = await Promise.race([exited.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late) {
      child.kill('SIGKILL');
      await exited;
    }
  }
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
}

/**
 * What a child started with a minimal environment (no `...process.env`) must still carry from the
 * test runner (scripts/test.ts): the file's private TMPDIR, whose leftovers the runner checks, and
 * the run's marker, by which the runner finds a process that outlived its file.
 */
export function runnerEnv(): Record<string, string> {
  const marker = process.env['PAYMENTS_TEST_RUN'];
  return { TMPDIR: tmpdir(), ...(marker === undefined ? {} : { PAYMENTS_TEST_RUN: marker }) };
}
