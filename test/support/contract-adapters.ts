// The two adapters a port's contract suite runs against — in-process and a private redis-server —
// with the set-up, tear-down and per-test harness lifecycle every such suite needs. A suite supplies
// only how to open its harness (on a manual clock in memory, on a Redis URL for Redis).
import { startRedis, type PrivateRedis } from './redis-server.ts';

export interface ContractHarness {
  close(): Promise<void>;
}

export interface ContractAdapter<H extends ContractHarness> {
  readonly name: string;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** A fresh harness for one test. */
  open(): H;
}

export function memoryContractAdapter<H extends ContractHarness>(open: () => H): ContractAdapter<H> {
  return { name: 'memory', setUp: async () => undefined, tearDown: async () => undefined, open };
}

/** Starts one private redis-server for the suite; each harness opens its own clients on it. */
export function redisContractAdapter<H extends ContractHarness>(open: (url: string) => H): ContractAdapter<H> {
  let server: PrivateRedis | undefined;
  return {
    name: 'redis',
    setUp: async () => {
      server = await startRedis();
    },
    tearDown: async () => {
      await server?.stop();
    },
    open: () => {
      if (server === undefined) throw new Error('redis-server not started');
      return open(server.url);
    },
  };
}

/** Runs `body` with a fresh harness and closes it whatever happens. */
export async function withHarness<H extends ContractHarness>(adapter: ContractAdapter<H>, body: (harness: H) => Promise<void>): Promise<void> {
  const harness = adapter.open();
  try {
    await body(harness);
  } finally {
    await harness.close();
  }
}
