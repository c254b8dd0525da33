// What the partner REST edge files (partner-api-*.test.ts) share: each file runs its feature's tests
// against the whole service as `npm start` wires it (ROLE=all: edge, shard workers, watcher, payout
// worker, webhooks, admin; sandbox chain and sandbox rail), once with the in-process bus and once
// with a private Redis, and reaches it through the helpers here. Conditions come from the real
// knobs: the sandbox rail's liquidity and outages through the admin service, deposits through
// POST /sandbox/deposits. Each file starts its own service, so no file sees another's counters.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServiceHarness, testPartners, type BusKind, type SandboxRailKnobs, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody, type CallOptions, type CallResult } from './support.ts';

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const validCpf = '52998224725';
export const brebMobile = '3001234567';
export const celoAddress = '0xcebA9300f2b948710d2653dD7B07f33A8B32118C';
/** The sandbox rail's starting BREB liquidity (src/rails/sandbox-rail.ts), restored after a test changes it. */
export const brebLiquidityDefault = '1000000000.00';
export const liquidityReason = 'Cannot process because liquidity is below the requested amount; try a smaller amount or another method.';

/** The error body of the spec: exactly code, reason (not empty) and retryable, plus the request id. */
export function errorShape(json: Record<string, unknown>, code: string): void {
  assert.equal(json['code'], code, JSON.stringify(json));
  assert.equal(typeof json['reason'], 'string');
  assert.ok((json['reason'] as string).length > 0);
  assert.equal(typeof json['retryable'], 'boolean');
  assert.equal(typeof json['request_id'], 'string');
  assert.deepEqual(Object.keys(json).sort(), ['code', 'reason', 'request_id', 'retryable']);
}

/** The running service of one bus kind and the partner calls the tests make on it. */
export interface PartnerApi {
  readonly busKind: BusKind;
  /** Available from the tests on (started in the suite's `before`). */
  readonly harness: ServiceHarness;
  readonly rail: SandboxRailKnobs;
  /** The API key of the partner with KYC on, and of the partner without. */
  readonly keyOn: string;
  readonly keyOff: string;
  api(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  /** Quotes at `path` and returns the quote id (asserting 200). */
  quote(key: string, path: string, body: Record<string, unknown>): Promise<string>;
  accept(key: string, body: Record<string, unknown>, idempotencyKey?: string): Promise<CallResult>;
  /** A payout accepted for `userId` (BREB by default; PIX has no daily caps); returns its id. */
  payout(key: string, userId: string, network?: string, method?: 'BREB' | 'PIX'): Promise<string>;
  /** Funds a payout on the sandbox chain (and notifies, where the network needs it); returns the deposit body. */
  fund(key: string, id: string, network: string, amount?: number): Promise<Record<string, unknown>>;
}

function partnerApi(busKind: BusKind, started: () => ServiceHarness): PartnerApi {
  const api = (method: string, path: string, options: CallOptions = {}): Promise<CallResult> => call(started().baseUrl, method, path, options);
  const quote = async (key: string, path: string, body: Record<string, unknown>): Promise<string> => {
    const response = await api('POST', path, { key, body });
    assert.equal(response.status, 200, response.text);
    return response.json['quote_id'] as string;
  };
  const accept = (key: string, body: Record<string, unknown>, idempotencyKey?: string): Promise<CallResult> =>
    api('POST', '/transaction', { key, body, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) });
  return {
    busKind,
    get harness() {
      return started();
    },
    get rail() {
      const { rail } = started();
      if (rail === null) throw new Error('the service runs no sandbox rail');
      return rail;
    },
    get keyOn() {
      return started().apiKeys[testPartners.kycOn] ?? '';
    },
    get keyOff() {
      return started().apiKeys[testPartners.kycOff] ?? '';
    },
    api,
    quote,
    accept,
    async payout(key, userId, network = 'STELLAR', method = 'BREB') {
      const body = method === 'BREB' ? { ...payoutQuoteBody, network } : { amount: 100, crypto_currency: 'USDC', network, payment_method: 'PIX', target_currency: 'BRL' };
      const quoteId = await quote(key, '/quote', body);
      const response = await accept(key, { quote_id: quoteId, user_id: userId, account_number: method === 'BREB' ? brebMobile : validCpf });
      assert.equal(response.status, 200, response.text);
      return response.json['id'] as string;
    },
    async fund(key, id, network, amount) {
      const deposit = await api('POST', '/sandbox/deposits', { key, body: { transaction_id: id, ...(amount === undefined ? {} : { amount }) } });
      assert.equal(deposit.status, 200, deposit.text);
      if (network !== 'STELLAR') {
        const notified = await api('POST', '/payments/notify', { key, body: { blockchain: network, on_chain_tx: deposit.json['on_chain_tx'], transaction_id: id } });
        assert.equal(notified.status, 202, notified.text);
        assert.deepEqual(notified.json, { enqueued: true });
      }
      return deposit.json;
    },
  };
}

/**
 * One suite per bus kind named `partner REST edge (<bus> bus): <feature>`, with a service of its
 * own started in `before` and stopped in `after` (which node:test runs even when a test or the
 * start itself failed).
 */
export function describePartnerApi(feature: string, body: (svc: PartnerApi) => void): void {
  for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
    describe(`partner REST edge (${busKind} bus): ${feature}`, () => {
      let harness: ServiceHarness | undefined;
      before(async () => {
        harness = await startServiceHarness({ busKind });
        if (harness.rail === null) throw new Error('the service runs no sandbox rail');
      });
      after(async () => {
        await harness?.stop();
      });
      body(partnerApi(busKind, () => {
        if (harness === undefined) throw new Error('the service is not started (its before hook failed)');
        return harness;
      }));
    });
  }
}
