// A private anvil (Foundry's local EVM node) for one test file: the binary comes from the npm
// platform package (@foundry-rs/anvil-<os>-<arch>, no install script needed), listens on
// 127.0.0.1 and a free port with chain id 42220 (Celo's, so viem's `celo` chain applies), and is
// stopped by its PID. Every wait here is bounded.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { freePort, stopChild } from './processes.ts';

export interface PrivateAnvil {
  readonly url: string;
  readonly port: number;
  readonly chainId: number;
  readonly pid: number;
  /** SIGTERM, then SIGKILL after a bound. */
  stop(): Promise<void>;
}

export interface StartAnvilOptions {
  readonly chainId?: number;
  readonly startTimeoutMs?: number;
}

const startTimeoutMsDefault = 15_000;
const stopTimeoutMs = 5_000;
const startAttemptsMax = 3;
const outputBytesMax = 8_192;

const platformPackages: Readonly<Record<string, string>> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

/** The anvil executable shipped in the platform package that npm installed next to @foundry-rs/anvil. */
export function anvilBinary(): string {
  const name = platformPackages[`${process.platform}-${process.arch}`];
  if (name === undefined) throw new Error(`no anvil build for ${process.platform}-${process.arch}`);
  const require = createRequire(import.meta.url);
  const root = dirname(require.resolve(`${name}/package.json`));
  return join(root, 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
}


async function chainIdAnswered(url: string): Promise<number | null> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1_000),
    });
    const body = (await response.json()) as { result?: unknown };
    return typeof body.result === 'string' ? Number.parseInt(body.result, 16) : null;
  } catch {
    return null;
  }
}


async function startOnce(options: StartAnvilOptions): Promise<PrivateAnvil> {
  const chainId = options.chainId ?? 42220;
  const port = await freePort();
  const child = spawn(anvilBinary(), [
    '--host', '127.0.0.1',
    '--port', String(port),
    '--chain-id', String(chainId),
    '--accounts', '1', // tests make and fund their own keys
    '--silent',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (output.length < outputBytesMax) output += chunk.toString('utf8');
  });
  const spawnFailed = new Promise<never>((_, reject) => child.once('error', reject));
  spawnFailed.catch(() => undefined);
  const url = `http://127.0.0.1:${port}`;
  const ready = async (): Promise<void> => {
    const deadlineMs = Date.now() + (options.startTimeoutMs ?? startTimeoutMsDefault);
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`anvil exited early (code ${String(child.exitCode)})`);
      const answered = await chainIdAnswered(url);
      if (answered === chainId) return;
      if (answered !== null) throw new Error(`anvil answered chain id ${answered}, expected ${chainId}`);
      if (Date.now() > deadlineMs) throw new Error(`anvil on port ${port} did not answer in time`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  try {
    await Promise.race([ready(), spawnFailed]);
  } catch (error) {
    await stopChild(child, stopTimeoutMs);
    const detail = output.trim() === '' ? '' : `: ${output.trim()}`;
    throw new Error(`could not start anvil${detail}`, { cause: error });
  }
  // A test runner that dies without calling stop() must not leave the node behind.
  const onExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', onExit);
  let stopped: Promise<void> | undefined;
  if (child.pid === undefined) throw new Error('anvil has no pid');
  return {
    url,
    port,
    chainId,
    pid: child.pid,
    stop: async () => {
      stopped ??= stopChild(child, stopTimeoutMs).finally(() => process.off('exit', onExit));
      return stopped;
    },
  };
}

/** Starts a private anvil on a free port; retries when the port was taken meanwhile. */
export async function startAnvil(options: StartAnvilOptions = {}): Promise<PrivateAnvil> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= startAttemptsMax; attempt += 1) {
    try {
      return await startOnce(options);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError instanceof Error ? lastError : new Error('could not start anvil');
}
