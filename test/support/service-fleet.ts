// The whole service as separate processes of `src/main.ts`, one per role instance, as an operator
// runs it: one private redis-server, one embedded store DATA_DIR shared by every process (one
// host), a partners file whose partners send webhooks to a local receiver, the sandbox chain and
// rail, and the development CA's certificates (`npm run dev-certs`): the admin service over TLS and
// the internal links over mutual TLS, as in production. Each process is started on free ports, reported ready when it prints its start-up summary
// (an edge also when its /readyz answers 200; with HEALTH_PORT in `env`, every process also when
// its health listener's /readyz does), stopped gracefully by its PID with SIGTERM (bounded
// wait, then SIGKILL), and keeps the tail of its output for failure messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PartnerConfig } from '../../src/config/partners.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { freePort, stopChild } from './processes.ts';
import { createDevCertificates, type DevCertificates } from '../../scripts/dev-certs.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from './redis-server.ts';

export type FleetRole = 'edge' | 'shard' | 'payout' | 'watcher' | 'webhooks' | 'admin' | 'all';

export interface FleetPartner {
  readonly id: string;
  /** Where its webhooks go (a local receiver; loopback is allowed in sandbox mode). */
  readonly webhookUrl: string;
}

export interface ServiceFleetOptions {
  readonly partners: readonly FleetPartner[];
  readonly shards?: number;
  /** Extra environment of every process. */
  readonly env?: Readonly<Record<string, string>>;
  /** Variables the fleet would set that its processes do not get (e.g. DEMO_API_KEY, to see one generated). */
  readonly unset?: readonly string[];
  /** Extra `redis-server` arguments (e.g. AOF, so the data survives `redis.halt()` / `redis.restart()`). */
  readonly redisArgs?: readonly string[];
  /** How much of each process's output (stdout and stderr) is kept; 6,000 characters by default. */
  readonly outputCharsMax?: number;
  /**
   * What each process runs: node's arguments before the role, and its working directory. By
   * default the TypeScript sources through tsx (`--import tsx src/main.ts`) in this directory;
   * the production build runs `dist/main.js` of a production-style install instead.
   */
  readonly program?: { readonly args: readonly string[]; readonly cwd: string };
}

export interface FleetProcess {
  readonly role: FleetRole;
  readonly name: string;
  readonly child: ChildProcess;
  /** The edge's HTTP base URL, or null for other roles. */
  readonly baseUrl: string | null;
  /** The health listener's base URL (HEALTH_PORT given in the fleet's `env`), or null. */
  readonly healthUrl: string | null;
  /** `127.0.0.1:<port>` of the admin gRPC service (`admin` and `all`), or null for other roles. */
  readonly adminAddress: string | null;
  /** The last lines the process wrote (stdout and stderr). */
  output(): string;
}

export interface StopResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stopMs: number;
}

export interface ServiceFleet {
  readonly redisUrl: string;
  /** The fleet's Redis, for tests of an outage (`halt`, `restart`, SIGSTOP by `pid`). */
  readonly redis: PrivateRedis;
  readonly keyPrefix: string;
  readonly dataDir: string;
  readonly storeDir: string;
  readonly opsApiKey: string;
  /** The CA and certificates every process uses (ADMIN_TLS_CA_FILE = `certificates.caFile` for the admin CLI). */
  readonly certificates: DevCertificates;
  /** API key per partner id. */
  readonly apiKeys: Readonly<Record<string, string>>;
  /** Webhook signing secret per partner id. */
  readonly webhookSecrets: Readonly<Record<string, string>>;
  /** Starts a process of `role`; `env` is added to the fleet's environment for this process only. */
  start(role: FleetRole, name: string, env?: Readonly<Record<string, string>>): Promise<FleetProcess>;
  /** SIGTERM and wait for the exit (SIGKILL after `killAfterMs`). */
  terminate(process: FleetProcess, killAfterMs?: number): Promise<StopResult>;
  /** SIGKILL (a crash: nothing is finished or handed back) and wait for the exit. */
  kill(process: FleetProcess): Promise<void>;
  running(): FleetProcess[];
  /** Stops every process (SIGTERM, bounded), Redis, and removes the data directory. */
  stop(): Promise<void>;
}

/**
 * Bound on one process's start-up (tsx compiles on start; CI machines are shared). 180 s: beside
 * the rest of the suite on a slow day (load average 15 on 2 cores) an edge of a seven-process fleet
 * took over 90 s to print its banner, with nothing wrong.
 */
const startTimeoutMs = 180_000;
const outputCharsMaxDefault = 6_000;
const readyPollMs = 50;
/** Starts of one process, each on fresh ports, when its ports were taken meanwhile (EADDRINUSE). */
const portTakenAttemptsMax = 3;

function secretKey(label: string): string {
  return `${label}_${randomBytes(20).toString('hex')}`;
}

export async function startServiceFleet(options: ServiceFleetOptions): Promise<ServiceFleet> {
  const dataDir = mkdtempSync(join(tmpdir(), 'service-fleet-'));
  let certificates: DevCertificates;
  try {
    certificates = createDevCertificates({ dir: join(dataDir, 'tls') });
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const redis: PrivateRedis = await startRedis(options.redisArgs === undefined ? {} : { extraArgs: options.redisArgs });
  const outputCharsMax = options.outputCharsMax ?? outputCharsMaxDefault;
  const opsApiKey = secretKey('ops');
  const apiKeys: Record<string, string> = {};
  const webhookSecrets: Record<string, string> = {};
  const partners: PartnerConfig[] = options.partners.map((partner) => {
    apiKeys[partner.id] = secretKey(partner.id.replaceAll('-', ''));
    webhookSecrets[partner.id] = secretKey('whsec');
    return {
      id: partner.id,
      name: `Fleet test partner ${partner.id}`,
      apiKeySha256: [sha256Hex(apiKeys[partner.id] ?? '')],
      kycEnabled: false,
      kybApproved: true,
      disabledUsers: [],
      webhook: { url: partner.webhookUrl, secret: webhookSecrets[partner.id] ?? '' },
    };
  });
  const partnersFile = join(dataDir, 'partners.json');
  writeFileSync(partnersFile, JSON.stringify({ partners }));
  const baseEnv: Record<string, string> = {
    HOST: '127.0.0.1',
    REDIS_URL: redis.url,
    DATA_DIR: dataDir,
    PARTNERS_FILE: partnersFile,
    OPS_API_KEY: opsApiKey,
    ADMIN_TLS_CERT_FILE: certificates.adminCertFile,
    ADMIN_TLS_KEY_FILE: certificates.adminKeyFile,
    INTERNAL_TLS_CA_FILE: certificates.caFile,
    INTERNAL_TLS_CERT_FILE: certificates.internalCertFile,
    INTERNAL_TLS_KEY_FILE: certificates.internalKeyFile,
    DEMO_API_KEY: secretKey('demo'),
    SANDBOX: '1',
    SHARDS: String(options.shards ?? 8),
    KEY_PREFIX: randomKeyPrefix('fleet'),
    LOG_LEVEL: process.env['FLEET_LOG'] ?? 'warn',
    ...options.env,
  };
  for (const name of options.unset ?? []) delete baseEnv[name];
  const programArgs = options.program?.args ?? ['--import', 'tsx', join(import.meta.dirname, '../../src/main.ts')];
  const processes = new Set<FleetProcess>();
  // Every child from the moment it is spawned (also one still starting), so stop() reaches all.
  const children = new Set<ChildProcess>();

  /** Starts one process of the fleet and waits until it is ready (see `start`). */
  const startProcess = async (role: FleetRole, name: string, extraEnv: Readonly<Record<string, string>>): Promise<FleetProcess> => {
    // Every listener gets its own free port (PORT 0 for the edge: it prints the bound port).
    const env: Record<string, string> = {
      ...baseEnv,
      PORT: '0',
      GRPC_PORT: String(await freePort()),
      PAYOUT_GRPC_PORT: String(await freePort()),
      CHAINS_GRPC_PORT: String(await freePort()),
      ...extraEnv,
    };
    const child = spawn(process.execPath, [...programArgs, role], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...withoutVariables(process.env, options.unset ?? []), ...env },
      ...(options.program === undefined ? {} : { cwd: options.program.cwd }),
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    let output = '';
    const append = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-outputCharsMax);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    const summary = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} (${role}) not started within ${startTimeoutMs} ms:\n${output}`)), startTimeoutMs);
      const check = (): void => {
        if (!output.includes(`role ${role};`)) return;
        clearTimeout(timer);
        child.stdout?.off('data', check);
        resolve(output);
      };
      child.stdout?.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${name} (${role}) exited during start-up (${String(code)}):\n${output}`));
      });
    }).catch(async (error: unknown) => {
      await stopChild(child, 2_000);
      throw error;
    });
    const edgePort = /edge listening on http:\/\/[^:]+:(\d+)/.exec(summary)?.[1];
    const baseUrl = edgePort === undefined ? null : `http://127.0.0.1:${edgePort}`;
    if (role === 'edge' && baseUrl === null) throw new Error(`${name}: no edge port in:\n${summary}`);
    if (baseUrl !== null) await untilReady(baseUrl, child, name);
    const healthPort = /health on http:\/\/[^:]+:(\d+)/.exec(summary)?.[1];
    const healthUrl = healthPort === undefined ? null : `http://127.0.0.1:${healthPort}`;
    if (baseEnv['HEALTH_PORT'] !== undefined && healthUrl === null) throw new Error(`${name}: no health port in:\n${summary}`);
    if (healthUrl !== null) await untilReady(healthUrl, child, name);
    const started: FleetProcess = {
      role,
      name,
      child,
      baseUrl,
      healthUrl,
      adminAddress: role === 'admin' || role === 'all' ? `127.0.0.1:${env['GRPC_PORT'] ?? ''}` : null,
      output: () => output,
    };
    processes.add(started);
    child.once('exit', () => processes.delete(started));
    return started;
  };

  const fleet: ServiceFleet = {
    redisUrl: redis.url,
    redis,
    keyPrefix: baseEnv['KEY_PREFIX'] ?? '',
    dataDir,
    storeDir: join(dataDir, 'store'),
    opsApiKey,
    certificates,
    apiKeys,
    webhookSecrets,
    async start(role, name, extraEnv = {}) {
      // A port `freePort` found free may be taken by another test lane before the child binds it
      // (the child then exits during start-up with EADDRINUSE): start it again on fresh ports.
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await startProcess(role, name, extraEnv);
        } catch (error) {
          if (attempt >= portTakenAttemptsMax || !String(error).includes('EADDRINUSE')) throw error;
        }
      }
    },
    async kill(target) {
      const { child } = target;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    async terminate(target, killAfterMs = 30_000) {
      const startedAtMs = Date.now();
      await stopChild(target.child, killAfterMs);
      return { code: target.child.exitCode, signal: target.child.signalCode, stopMs: Date.now() - startedAtMs };
    },
    running: () => [...processes],
    async stop() {
      await Promise.all([...children].map((child) => stopChild(child, 10_000)));
      await redis.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return fleet;
}

function withoutVariables(env: NodeJS.ProcessEnv, names: readonly string[]): NodeJS.ProcessEnv {
  const copy = { ...env };
  for (const name of names) delete copy[name];
  return copy;
}

/** Polls GET /readyz until 200 (the edge reaches the store and the bus; a role's loops succeed), bounded. */
async function untilReady(baseUrl: string, child: ChildProcess, name: string): Promise<void> {
  const deadlineMs = Date.now() + startTimeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready`);
    try {
      const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadlineMs) throw new Error(`${name} not ready within ${startTimeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, readyPollMs));
  }
}
