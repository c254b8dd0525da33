// A private Redis Cluster for one test file: `masters` redis-server nodes, and `replicas` more per
// master (cluster mode, no persistence, 127.0.0.1 only, free ports, each in its own temp dir via
// startRedis), joined with `redis-cli --cluster create … --cluster-replicas <n> --cluster-yes`,
// ready once every node reports `cluster_state:ok` and agrees on the slot map (and, with replicas,
// every replica has its master). `crashMaster` kills a master with SIGKILL so its replica takes over.
// Stopped node by node by PID. Every wait is bounded.
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { startRedis, type PrivateRedis } from './redis-server.ts';

export interface ClusterNodeAddress {
  readonly host: string;
  readonly port: number;
}

export interface PrivateRedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…`, the syntax REDIS_URL takes (docs/operations.md). */
  readonly url: string;
  readonly nodes: readonly ClusterNodeAddress[];
  /** A plain (non-cluster) connection to one node, for CLUSTER KEYSLOT / COUNTKEYSINSLOT checks. */
  nodeClient(port: number): Redis;
  /** The port of the master serving `key`'s slot now, as a live node sees the slot map. */
  masterPortOf(key: string): Promise<number>;
  /**
   * Kills the master on `port` (SIGKILL) and waits until a replica serves its slots and every live
   * node says `cluster_state:ok` again.
   */
  crashMaster(port: number): Promise<void>;
  stop(): Promise<void>;
}

export interface StartClusterOptions {
  /** Master nodes; Redis Cluster needs at least 3. */
  readonly masters?: number;
  /** Replicas per master (a failover needs at least 1). Default 0. */
  readonly replicas?: number;
  readonly startTimeoutMs?: number;
}

const mastersDefault = 3;
const startTimeoutMsDefault = 30_000;
const outputBytesMax = 16_384;

/** Runs a command to completion within `timeoutMs` (killed by PID otherwise); resolves with its output. */
async function run(command: string, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer): void => {
      if (output.length < outputBytesMax) output += chunk.toString('utf8');
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit ${String(code)}`}): ${output.trim()}`));
    });
  });
}

/** Polls `check` every 50 ms until it returns true, or throws after the deadline. */
async function until(what: string, deadlineMs: number, check: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadlineMs) throw new Error(`redis cluster: ${what} not reached in time`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The slot map as one node sees it: `start-end@port` ranges, sorted (comparable across nodes). */
async function slotMap(client: Redis): Promise<string> {
  const reply = (await client.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]]]>;
  return reply
    .map(([start, end, master]) => `${start}-${end}@${master[1]}`)
    .sort()
    .join(',');
}

export async function startRedisCluster(options: StartClusterOptions = {}): Promise<PrivateRedisCluster> {
  const masters = options.masters ?? mastersDefault;
  const replicas = options.replicas ?? 0;
  if (!Number.isSafeInteger(masters) || masters < 3) throw new RangeError('a Redis Cluster needs at least 3 masters');
  if (!Number.isSafeInteger(replicas) || replicas < 0) throw new RangeError('replicas per master must be 0 or more');
  const deadlineMs = Date.now() + (options.startTimeoutMs ?? startTimeoutMsDefault);
  const servers: PrivateRedis[] = [];
  const clients: Redis[] = [];
  const stop = async (): Promise<void> => {
    for (const client of clients.splice(0)) client.disconnect();
    await Promise.all(servers.map(async (server) => server.stop()));
  };
  try {
    for (let index = 0; index < masters * (1 + replicas); index += 1) {
      // The cluster config file is written in the node's own temp dir (startRedis sets --dir).
      servers.push(
        await startRedis({
          extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'],
        }),
      );
    }
    const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes'], Math.max(1_000, deadlineMs - Date.now()));
    for (const server of servers) {
      clients.push(new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: false, maxRetriesPerRequest: 1 }));
    }
    await until('cluster_state:ok on every node', deadlineMs, async () => {
      const infos = await Promise.all(clients.map(async (client) => String(await client.call('CLUSTER', 'INFO'))));
      return infos.every((info) => info.includes('cluster_state:ok'));
    });
    await until('one slot map on every node', deadlineMs, async () => {
      const maps = await Promise.all(clients.map(slotMap));
      return new Set(maps).size === 1 && (maps[0]?.split(',').length ?? 0) >= masters;
    });
    if (replicas > 0) {
      await until('every replica linked to its master', deadlineMs, async () => {
        const roles = await Promise.all(clients.map(async (client) => String(await client.info('replication'))));
        const linked = roles.filter((info) => info.includes('role:slave') && info.includes('master_link_status:up'));
        return linked.length === masters * replicas;
      });
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const byPort = new Map(servers.map((server, index) => [server.port, clients[index]] as const));
  const crashed = new Set<number>();
  const liveClients = (): Redis[] => servers.filter((server) => !crashed.has(server.port)).map((server) => byPort.get(server.port)).filter((client): client is Redis => client !== undefined);
  const masterPortOf = async (key: string): Promise<number> => {
    const probe = liveClients()[0];
    if (probe === undefined) throw new Error('no live cluster node');
    const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', key));
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]]]>;
    const range = ranges.find(([start, end]) => slot >= start && slot <= end);
    if (range === undefined) throw new Error(`slot ${slot} is not served`);
    return range[2][1];
  };
  let stopped: Promise<void> | undefined;
  return {
    url: `redis+cluster://${servers.map((server) => `127.0.0.1:${server.port}`).join(',')}`,
    nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })),
    nodeClient(port) {
      const client = byPort.get(port);
      if (client === undefined) throw new Error(`no cluster node on port ${port}`);
      return client;
    },
    masterPortOf,
    async crashMaster(port) {
      const server = servers.find((candidate) => candidate.port === port);
      if (server === undefined) throw new Error(`no cluster node on port ${port}`);
      crashed.add(port);
      byPort.get(port)?.disconnect();
      await server.crash();
      // The node timeout is 5 s: the replicas notice, then one is elected; bounded at 30 s.
      const deadline = Date.now() + 30_000;
      await until(`a replica serving the slots of ${port}`, deadline, async () => {
        const maps = await Promise.all(liveClients().map(slotMap));
        return new Set(maps).size === 1 && !(maps[0] ?? '').includes(`@${port}`);
      });
      await until('cluster_state:ok on every live node', deadline, async () => {
        const infos = await Promise.all(liveClients().map(async (client) => String(await client.call('CLUSTER', 'INFO'))));
        return infos.every((info) => info.includes('cluster_state:ok'));
      });
    },
    stop: async () => {
      stopped ??= stop();
      return stopped;
    },
  };
}
