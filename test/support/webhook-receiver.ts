// A real local HTTP receiver for webhook tests: node:http on 127.0.0.1 and a free port. Each test
// scripts how it answers (status sequence, delays, redirects, response body sizes, Retry-After) and
// reads back what arrived (headers, raw body, timing, how many deliveries of one event or one
// transaction were in progress at once). A tarpit: an endpoint that accepts connections and never
// answers. Also: feeding the outbox exactly as a transaction actor does (one versioned commit per
// transaction step, rows on topic 'webhooks' keyed by transaction).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { outboxRowId, type SnapshotStore } from '../../src/store/store.ts';
import { eventually } from './eventually.ts';

export interface ReceiverBehaviour {
  /** Default 200. */
  readonly status?: number;
  /** Wait before answering (ms). */
  readonly delayMs?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Bytes of response body (default 2: "ok"). */
  readonly bodyBytes?: number;
  /** This exact response body instead (bytes as given; `bodyBytes` is then ignored). */
  readonly body?: string | Buffer;
  /** Answer 302 with this Location (a path on this receiver or any URL). */
  readonly redirectTo?: string;
}

export interface ReceivedRequest {
  readonly index: number;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly receivedAtMs: number;
  respondedAtMs: number | null;
  status: number | null;
  /** From the headers / body, for convenience. */
  readonly eventId: string | null;
  readonly sequence: number | null;
  readonly event: string | null;
  readonly transactionId: string | null;
  readonly status_: string | null;
}

export type Responder = (request: ReceivedRequest) => ReceiverBehaviour;

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hooks` */
  readonly url: string;
  readonly origin: string;
  readonly requests: ReceivedRequest[];
  /** Answers the next requests with these behaviours in arrival order, then with `fallback`. */
  script(behaviours: readonly ReceiverBehaviour[], fallback?: ReceiverBehaviour): void;
  /** Decides each answer from the request (takes precedence over a script while set). */
  respondWith(responder: Responder | null): void;
  /** Requests to one path (e.g. a redirect target). */
  requestsTo(path: string): ReceivedRequest[];
  /** The most deliveries of one event id that were in progress at the same moment. */
  maxConcurrentPerEvent(): number;
  /** The most deliveries of one transaction that were in progress at the same moment. */
  maxConcurrentPerTransaction(): number;
  /** The most requests in progress at the same moment. */
  maxConcurrent(): number;
  /** Requests in progress right now (received, not yet answered or closed). */
  inFlight(): number;
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const requestBytesMax = 1024 * 1024;

function headerRecord(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function parsed(body: string): { event: string | null; transactionId: string | null; status: string | null } {
  try {
    const value = JSON.parse(body) as { event?: unknown; data?: { id?: unknown; status?: unknown } };
    return {
      event: typeof value.event === 'string' ? value.event : null,
      transactionId: typeof value.data?.id === 'string' ? value.data.id : null,
      status: typeof value.data?.status === 'string' ? value.data.status : null,
    };
  } catch {
    return { event: null, transactionId: null, status: null };
  }
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  let scripted: ReceiverBehaviour[] = [];
  let fallback: ReceiverBehaviour = {};
  let responder: Responder | null = null;
  const inFlightByEvent = new Map<string, number>();
  const inFlightByTransaction = new Map<string, number>();
  let inFlight = 0;
  let maxPerEvent = 0;
  let maxPerTransaction = 0;
  let maxInFlight = 0;
  const sockets = new Set<Socket>();

  const bump = (map: Map<string, number>, key: string | null, delta: number): number => {
    if (key === null) return 0;
    const next = (map.get(key) ?? 0) + delta;
    if (next === 0) map.delete(key);
    else map.set(key, next);
    return next;
  };

  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const fromBody = parsed(body);
    const headers = headerRecord(req);
    const sequenceHeader = headers['x-service-sequence'];
    const record: ReceivedRequest = {
      index: requests.length,
      method: req.method ?? '',
      path: (req.url ?? '/').split('?')[0] ?? '/',
      headers,
      body,
      receivedAtMs: Date.now(),
      respondedAtMs: null,
      status: null,
      eventId: headers['x-service-event-id'] ?? null,
      sequence: sequenceHeader === undefined ? null : Number(sequenceHeader),
      event: fromBody.event,
      transactionId: fromBody.transactionId,
      status_: fromBody.status,
    };
    requests.push(record);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    maxPerEvent = Math.max(maxPerEvent, bump(inFlightByEvent, record.eventId, 1));
    maxPerTransaction = Math.max(maxPerTransaction, bump(inFlightByTransaction, record.transactionId, 1));
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      inFlight -= 1;
      bump(inFlightByEvent, record.eventId, -1);
      bump(inFlightByTransaction, record.transactionId, -1);
      record.respondedAtMs = Date.now();
    };
    res.on('close', end);
    const behaviour = responder !== null ? responder(record) : (scripted.shift() ?? fallback);
    const answer = (): void => {
      if (res.destroyed) return;
      if (behaviour.redirectTo !== undefined) {
        record.status = 302;
        res.writeHead(302, { location: behaviour.redirectTo, ...behaviour.headers });
        res.end();
        return;
      }
      const status = behaviour.status ?? 200;
      record.status = status;
      const bytes = behaviour.bodyBytes ?? 2;
      res.writeHead(status, { 'content-type': 'text/plain', ...behaviour.headers });
      if (behaviour.body !== undefined) {
        res.end(behaviour.body);
        return;
      }
      if (bytes <= 2) {
        res.end('ok'.slice(0, bytes));
        return;
      }
      // Large bodies are streamed in chunks so a client that stops reading is noticed.
      const chunk = Buffer.alloc(Math.min(bytes, 64 * 1024), 'x');
      let remaining = bytes;
      const pump = (): void => {
        while (remaining > 0 && !res.destroyed) {
          const piece = chunk.subarray(0, Math.min(chunk.length, remaining));
          remaining -= piece.length;
          if (!res.write(piece)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end();
      };
      pump();
    };
    if ((behaviour.delayMs ?? 0) > 0) {
      const timer = setTimeout(answer, behaviour.delayMs);
      res.on('close', () => clearTimeout(timer));
    } else {
      answer();
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > requestBytesMax) {
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: `${origin}/hooks`,
    origin,
    requests,
    script(behaviours, fallbackBehaviour = {}) {
      scripted = [...behaviours];
      fallback = fallbackBehaviour;
    },
    respondWith(next) {
      responder = next;
    },
    requestsTo: (path) => requests.filter((request) => request.path === path),
    maxConcurrentPerEvent: () => maxPerEvent,
    maxConcurrentPerTransaction: () => maxPerTransaction,
    maxConcurrent: () => maxInFlight,
    inFlight: () => inFlight,
    async waitForRequests(count, timeoutMs = 10_000) {
      await eventually(() => {
        if (requests.length < count) throw new Error(`receiver got ${requests.length} requests, waiting for ${count}`);
      }, timeoutMs);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- a tarpit: accepts connections and never answers ----

export interface Tarpit {
  /** `http://127.0.0.1:<port>/hooks`: the TCP connection is accepted, no byte ever comes back. */
  readonly url: string;
  /** The same port as `https://…`: the TLS handshake never completes (a connect that hangs). */
  readonly httpsUrl: string;
  /** Connections accepted since start. */
  connections(): number;
  /** Connections open right now. */
  open(): number;
  /** The most connections that were open at the same moment. */
  maxOpen(): number;
  close(): Promise<void>;
}

/**
 * A receiver that takes the connection (and whatever is sent on it) and never writes anything:
 * the partner endpoint that "accepts and never answers". Closing it destroys every connection, so
 * attempts stuck on it end at once.
 */
export async function startTarpit(): Promise<Tarpit> {
  const sockets = new Set<Socket>();
  let connections = 0;
  let maxOpen = 0;
  const server = createNetServer((socket) => {
    connections += 1;
    sockets.add(socket);
    maxOpen = Math.max(maxOpen, sockets.size);
    socket.on('data', () => undefined); // read and drop: the client never sees back-pressure, nor an answer
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    httpsUrl: `https://127.0.0.1:${port}/hooks`,
    connections: () => connections,
    open: () => sockets.size,
    maxOpen: () => maxOpen,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- feeding the outbox as the transaction actor does ----

export interface WebhookStep {
  readonly event: 'transaction.created' | 'transaction.updated';
  readonly status: string;
  readonly onChainId?: string | null;
  readonly refundOnChainId?: string | null;
}

export interface FedTransaction {
  readonly transactionId: string;
  readonly partnerId: string;
  version: number;
}

export function newTransaction(partnerId: string): FedTransaction {
  return { transactionId: randomUUID(), partnerId, version: 0 };
}

/**
 * One actor step of a transaction: a versioned commit of its state with these webhooks as outbox
 * rows (topic 'webhooks', partitionKey = transaction id), as src/actors/transaction-actor.ts writes
 * them. The payload also carries `bankCode` and `origin`, which must never reach a partner.
 */
export async function commitWebhooks(store: SnapshotStore, tx: FedTransaction, steps: readonly WebhookStep[]): Promise<string[]> {
  const actorKey = `transaction/${tx.transactionId}`;
  const newVersion = tx.version + 1;
  const outbox = steps.map((step, index) => ({
    id: outboxRowId(actorKey, newVersion, index),
    topic: 'webhooks',
    partitionKey: tx.transactionId,
    payload: {
      partnerId: tx.partnerId,
      event: step.event,
      data: {
        id: tx.transactionId,
        status: step.status,
        quoteId: `quote-${tx.transactionId.slice(0, 8)}`,
        accountNumber: '3001234567',
        onChainId: step.onChainId ?? null,
        refundOnChainId: step.refundOnChainId ?? null,
        taxId: null,
        externalId: null,
        partnerUserId: 'user-1',
        bankCode: '0001',
        origin: 'internal-origin',
      },
    },
  }));
  const result = await store.commit({
    actorKey,
    expectedVersion: tx.version,
    newVersion,
    state: { status: steps[steps.length - 1]?.status ?? null },
    fence: { shard: 0, token: 1 },
    appliedCommands: [],
    outbox,
    readModels: [],
  });
  if (result !== 'ok') throw new Error(`commit of ${actorKey} v${newVersion}: ${result}`);
  tx.version = newVersion;
  return outbox.map((row) => row.id);
}

/** A silent logger with the dispatcher's shape, collecting lines for assertions (no secrets may appear). */
export function collectingLogger(): { lines: string[]; info(fields: Record<string, unknown>, message: string): void; warn(fields: Record<string, unknown>, message: string): void; error(fields: Record<string, unknown>, message: string): void; debug(fields: Record<string, unknown>, message: string): void } {
  const lines: string[] = [];
  const push = (level: string) => (fields: Record<string, unknown>, message: string): void => {
    lines.push(`${level} ${message} ${JSON.stringify(fields)}`);
  };
  return { lines, info: push('info'), warn: push('warn'), error: push('error'), debug: push('debug') };
}
