// Two things for the rails tests:
//  1. flow helpers that drive a transaction through the real actors (quote → accept → deposit);
//  2. when run as a program, a payout role in its own process (for the crash test): the real
//     composition (createContext + createRailServices + startPayoutRole) over the Redis bus and the
//     embedded store directory it shares with the test (LMDB allows several processes on one
//     machine). Prints "ready" once started; runs until killed.
//     Usage: REDIS_URL=… DATA_DIR=… KEY_PREFIX=… SHARDS=… node --import tsx test/support/payout-child.ts
//     Knobs: PAYOUT_CHILD_LATENCY_MS (sandbox latency), PAYOUT_CHILD_LEASE_MS (claim lease).
import { randomUUID } from 'node:crypto';
import type { ActorClient } from '../../src/actors/client.ts';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { AcceptReply, DomainReply } from '../../src/actors/transaction-actor.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Quote } from '../../src/domain/quote.ts';
import type { Decimal } from '../../src/domain/money.ts';
import { createRailServices } from '../../src/service/rail-services.ts';
import { createContext } from '../../src/service/context.ts';
import type { SnapshotStore } from '../../src/store/store.ts';
import { acceptPayload } from './accept-payload.ts';

export const partnerId = 'demo';

export async function createQuote(
  client: ActorClient,
  store: SnapshotStore,
  request: { kind: 'payout' | 'onramp'; amount: number; paymentMethod: 'BREB' | 'PIX' },
): Promise<Quote> {
  const quoteId = randomUUID();
  const reply = await client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId,
    request: {
      kind: request.kind,
      amount: request.amount,
      cryptoCurrency: 'USDC',
      network: 'STELLAR',
      paymentMethod: request.paymentMethod,
      targetCurrency: request.paymentMethod === 'BREB' ? 'COP' : 'BRL',
    },
  });
  if (!reply.ok) throw new Error(`quote refused: ${JSON.stringify(reply)}`);
  const quote = await loadQuote(store, quoteId);
  if (quote === null) throw new Error('the quote is not durable');
  return quote;
}

/** Accepts the quote; the recipient (payout) or the wallet (onramp) is `accountNumber`. */
export async function accept(client: ActorClient, quote: Quote, accountNumber: string): Promise<string> {
  const transactionId = randomUUID();
  const payload = acceptPayload(quote, { partnerId, userId: `user-${randomUUID()}`, accountNumber, paymentContext: { depositAddress: 'GDEPOSIT' } });
  const reply = await client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload), { timeoutMs: 20_000 });
  if (!reply.ok || reply.kycRequired) throw new Error(`acceptance refused: ${JSON.stringify(reply)}`);
  return transactionId;
}

/** The on-chain deposit of exactly the quoted amount (what a watcher would report). */
export async function depositExact(client: ActorClient, transactionId: string, quote: Quote): Promise<DomainReply> {
  return client.ask<DomainReply>(
    'transaction',
    transactionId,
    'DepositDetected',
    toJsonValue({ kind: 'DepositDetected', onChainId: `hash-${randomUUID()}`, amount: quote.sourceAmount, network: quote.network, asset: quote.cryptoCurrency, sender: 'GSENDER' }),
    { timeoutMs: 20_000 },
  );
}

export async function pixPaymentReceived(client: ActorClient, transactionId: string, providerPaymentId: string, amount: Decimal): Promise<DomainReply> {
  return client.ask<DomainReply>('transaction', transactionId, 'PixPaymentReceived', toJsonValue({ kind: 'PixPaymentReceived', providerPaymentId, amount }), {
    timeoutMs: 20_000,
  });
}

/** The partner-visible record (GET /transaction/{id} reads it). */
export async function transactionDoc(store: SnapshotStore, transactionId: string): Promise<{ status: string; refundOnChainId: string | null }> {
  const doc = await store.get('transactions', transactionId);
  if (doc === null) throw new Error('no transaction document');
  return { status: String(doc.status), refundOnChainId: typeof doc.refundOnChainId === 'string' ? doc.refundOnChainId : null };
}

async function main(): Promise<void> {
  const env = readEnv({ ...process.env, ROLE: 'payout', LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
  const ctx = await createContext(env);
  const leaseMs = Number(process.env.PAYOUT_CHILD_LEASE_MS ?? 2_500);
  const rails = createRailServices(ctx, {
    sandbox: { latencyMs: Number(process.env.PAYOUT_CHILD_LATENCY_MS ?? 0) },
    worker: { leaseMs, pollIntervalMs: 50, retryDelayMsMin: 100, retryDelayMsMax: 500, railCallTimeoutMs: 1_000, reportTimeoutMs: 1_000 },
    serveLink: false,
  });
  const role = await rails.startPayoutRole();
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => {
    role
      .stop()
      .then(() => rails.close())
      .then(() => ctx.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

if (process.argv[1]?.endsWith('payout-child.ts')) {
  main().catch((error: unknown) => {
    process.stderr.write(`payout child failed: ${String(error)}\n`);
    process.exit(1);
  });
}
