// An EVM JSON-RPC endpoint behind a load balancer whose backends disagree: a small HTTP proxy in
// front of a real node (anvil) that forwards every call, except that transaction receipts come
// from a backend `receiptLagBlocks` behind the head. A receipt whose block is newer than
// head − lag is answered `null`, as a lagging node that has not seen the block yet would answer;
// everything else (block number, transaction counts at a depth, broadcasts) comes from the node
// that is up to date. That is the split that made a Celo send sign a second transfer for one key:
// the nonce looked consumed, the receipt of the attempt that consumed it looked absent.
//
// Listens on 127.0.0.1 and a free port; `close()` stops it. Bodies are capped; batches work.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LaggingRpc {
  readonly url: string;
  /** Receipts of blocks newer than head − `blocks` answer null (0: no lag). */
  setReceiptLag(blocks: number): void;
  /** Receipt lookups answered null because of the lag, so far. */
  hiddenReceipts(): number;
  close(): Promise<void>;
}

const bodyBytesMax = 1024 * 1024;
const upstreamTimeoutMs = 10_000;

interface RpcCall {
  readonly jsonrpc?: unknown;
  readonly id?: unknown;
  readonly method?: unknown;
  readonly params?: unknown;
}

export async function startLaggingRpc(options: { readonly upstreamUrl: string }): Promise<LaggingRpc> {
  let lagBlocks = 0;
  let hidden = 0;

  async function upstream(payload: unknown): Promise<unknown> {
    const response = await fetch(options.upstreamUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(upstreamTimeoutMs),
    });
    return response.json();
  }

  async function answer(call: RpcCall): Promise<unknown> {
    const forwarded = await upstream(call);
    if (lagBlocks === 0 || call.method !== 'eth_getTransactionReceipt') return forwarded;
    const receipt = (forwarded as { result?: { blockNumber?: unknown } | null }).result;
    if (receipt === null || receipt === undefined || typeof receipt.blockNumber !== 'string') return forwarded;
    const head = (await upstream({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber', params: [] })) as { result?: unknown };
    if (typeof head.result !== 'string') return forwarded;
    if (BigInt(receipt.blockNumber) <= BigInt(head.result) - BigInt(lagBlocks)) return forwarded;
    hidden += 1;
    return { jsonrpc: '2.0', id: call.id ?? null, result: null };
  }

  const server = createServer((request, response) => {
    handle(request, response, answer).catch(() => {
      if (!response.headersSent) response.writeHead(502).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setReceiptLag: (blocks) => {
      if (!Number.isSafeInteger(blocks) || blocks < 0) throw new RangeError('receipt lag is a non-negative whole number of blocks');
      lagBlocks = blocks;
    },
    hiddenReceipts: () => hidden,
    close: async () => closeServer(server),
  };
}

async function handle(request: IncomingMessage, response: ServerResponse, answer: (call: RpcCall) => Promise<unknown>): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > bodyBytesMax) {
      response.writeHead(413).end();
      return;
    }
    chunks.push(buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    send(response, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    return;
  }
  const calls = Array.isArray(body) ? (body as RpcCall[]) : [body as RpcCall];
  const answers = await Promise.all(calls.map(answer));
  send(response, Array.isArray(body) ? answers : answers[0]);
}

function send(response: ServerResponse, payload: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
