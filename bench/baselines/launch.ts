// Starts the two server baselines as child processes and waits until they answer:
// bare uWS (bare-uws.ts) and the transport loop (transport-edge.ts + transport-worker.ts).
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { freePort, http, startNode, waitFor, type NodeProcess } from '../lib/processes.ts';

export interface BaselineServer {
  readonly baseUrl: string;
  readonly processes: readonly NodeProcess[];
  stop(): Promise<void>;
}

const entry = (name: string): string => fileURLToPath(new URL(`./${name}`, import.meta.url));
const readyTimeoutMs = 60_000;

async function stopAll(processes: readonly NodeProcess[]): Promise<void> {
  for (const proc of [...processes].reverse()) await proc.stop();
}

async function waitForPost(baseUrl: string, processes: readonly NodeProcess[], what: string): Promise<void> {
  await waitFor(
    what,
    async () => (await http(`${baseUrl}/quote`, { method: 'POST', body: '{}', timeoutMs: 2_000 })).status === 200,
    readyTimeoutMs,
    processes,
  );
}

/** The edge's ceiling: a bare uWS handler answering `responseBody`. */
export async function startBareUws(responseBody: string): Promise<BaselineServer> {
  const port = await freePort();
  const proc = startNode('bare-uws', entry('bare-uws.ts'), { PORT: String(port), BENCH_RESPONSE_BODY: responseBody });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitForPost(baseUrl, [proc], 'the bare uWS baseline to answer');
  } catch (error) {
    await proc.stop();
    throw error;
  }
  return { baseUrl, processes: [proc], stop: () => stopAll([proc]) };
}

/** The transport's ceiling: uWS → Redis stream → worker process → reply stream → response. */
export async function startTransport(redisUrl: string, responseBody: string): Promise<BaselineServer> {
  const prefix = `bench-transport-${randomBytes(4).toString('hex')}:`;
  const processes: NodeProcess[] = [];
  try {
    const worker = startNode('transport-worker', entry('transport-worker.ts'), {
      REDIS_URL: redisUrl,
      BENCH_STREAM_PREFIX: prefix,
      BENCH_RESPONSE_BODY: responseBody,
    });
    processes.push(worker);
    await waitFor('the transport worker', async () => Promise.resolve(worker.output().includes('ready')), readyTimeoutMs, processes);
    const port = await freePort();
    processes.push(startNode('transport-edge', entry('transport-edge.ts'), { PORT: String(port), REDIS_URL: redisUrl, BENCH_STREAM_PREFIX: prefix }));
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitForPost(baseUrl, processes, 'the transport baseline to answer');
    return { baseUrl, processes, stop: () => stopAll(processes) };
  } catch (error) {
    await stopAll(processes);
    throw error;
  }
}
