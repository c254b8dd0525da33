// The wallet an onramp delivers to, checked at acceptance over real HTTP against the composition
// root (ROLE=all, sandbox chain and rail): a destination that would swallow the crypto — one of our
// own addresses (deposit address, hot wallet), the token itself (Stellar issuer, Solana mint, Celo
// token contract), a Solana token account or a Celo contract (the sandbox ledger answers what the
// chain would) — is refused with 400 account_unverifiable and a reason, before any PIX charge. A
// lookup the chain cannot answer is a retryable 503, never an acceptance.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxDepositAddress } from '../../src/chains/config.ts';
import { randomAddress, SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { onrampChargesCollection } from '../../src/onramp/charges.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { checkedFetch } from '../support/openapi-validation.ts';

const apiKey = `demo_${randomUUID().replaceAll('-', '')}`;
const opsKey = `ops_${randomUUID().replaceAll('-', '')}`;

/** The corridor mints of the sandbox (config/corridors.json, public facts). */
const tokens: Readonly<Record<Network, string>> = {
  STELLAR: 'GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN',
  SOLANA: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  CELO: '0xcebA9300f2b948710d2653dD7B07f33A8B32118C',
};

interface Response {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

describe('onramp destinations: what cannot receive the crypto is refused at acceptance', () => {
  let dataDir: string;
  let service: RunningService;
  let port: number;
  let chain: SandboxChain;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-onramp-destinations-'));
    const env = readEnv({
      DATA_DIR: dataDir,
      ROLE: 'all',
      SANDBOX: '1',
      LOG_LEVEL: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug',
      PORT: '0',
      HOST: '127.0.0.1',
      GRPC_PORT: '0', ADMIN_TLS: 'off',
      PAYOUT_GRPC_PORT: '0',
      SHARDS: '8',
      DEMO_API_KEY: apiKey,
      OPS_API_KEY: opsKey,
    });
    service = await startService(env);
    if (service.port === null) throw new Error('the service started no edge');
    port = service.port;
    chain = new SandboxChain({ store: service.ctx.store, clock: { nowMs: () => Date.now() }, setups: [] });
  });

  after(async () => {
    await service.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
    const response = await checkedFetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'X-API-Key': apiKey },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function acceptTo(network: Network, destination: string): Promise<Response> {
    const quoted = await call('POST', '/quote/onramp', { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network, payment_method: 'PIX' });
    assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
    return call('POST', '/transaction', { quote_id: quoted.body.quote_id, user_id: `u-${randomUUID()}`, account_number: destination });
  }

  async function chargeCount(): Promise<number> {
    return (await service.ctx.store.list(onrampChargesCollection, { limit: 1 })).total;
  }

  /** Accepts to `destination`, expecting a refusal for `reason` and no PIX charge created. */
  async function assertRefused(network: Network, destination: string, reason: RegExp): Promise<void> {
    const chargesBefore = await chargeCount();
    const answer = await acceptTo(network, destination);
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'account_unverifiable');
    assert.equal(answer.body.retryable, false);
    assert.match(String(answer.body.reason), reason);
    assert.equal(await chargeCount(), chargesBefore, 'no PIX charge');
  }

  const cases: ReadonlyArray<{ name: string; network: Network; destination: () => string; reason: RegExp }> = [
    { name: 'Stellar: our deposit address (also the sandbox hot wallet)', network: 'STELLAR', destination: () => sandboxDepositAddress('STELLAR'), reason: /our own addresses/ },
    { name: 'Stellar: the USDC issuer (a payment to it burns the tokens)', network: 'STELLAR', destination: () => tokens.STELLAR, reason: /token itself/ },
    { name: 'Solana: our deposit address', network: 'SOLANA', destination: () => sandboxDepositAddress('SOLANA'), reason: /our own addresses/ },
    { name: 'Solana: the USDC mint', network: 'SOLANA', destination: () => tokens.SOLANA, reason: /token itself/ },
    { name: 'Celo: our deposit address, in lower case', network: 'CELO', destination: () => sandboxDepositAddress('CELO').toLowerCase(), reason: /our own addresses/ },
    { name: 'Celo: the USDC token contract', network: 'CELO', destination: () => tokens.CELO, reason: /token itself/ },
  ];

  for (const { name, network, destination, reason } of cases) {
    test(`${name}: 400 account_unverifiable, no charge`, async () => {
      await assertRefused(network, destination(), reason);
    });
  }

  test('Solana: a token account (owned by the SPL Token program on the chain) is refused; its owner wallet is accepted', async () => {
    const tokenAccount = randomAddress('SOLANA');
    await chain.registerAccount('SOLANA', tokenAccount, 'token_account');
    await assertRefused('SOLANA', tokenAccount, /token account/);
    const wallet = await acceptTo('SOLANA', randomAddress('SOLANA'));
    assert.equal(wallet.status, 200, JSON.stringify(wallet.body));
  });

  test('Celo: an address with contract code is refused', async () => {
    const contract = randomAddress('CELO');
    await chain.registerAccount('CELO', contract, 'contract');
    await assertRefused('CELO', contract, /contract/);
  });

  test('the chain cannot be asked: 503, retryable, and no charge is created; accepted once it answers again', async () => {
    await chain.setKnobs('SOLANA', { lookupOutage: true });
    const quoted = await call('POST', '/quote/onramp', { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX' });
    const body = { quote_id: quoted.body.quote_id, user_id: `u-${randomUUID()}`, account_number: randomAddress('SOLANA') };
    const chargesBefore = await chargeCount();
    try {
      const answer = await call('POST', '/transaction', body);
      assert.equal(answer.status, 503, JSON.stringify(answer.body));
      assert.equal(answer.body.retryable, true);
      assert.equal(await chargeCount(), chargesBefore, 'no PIX charge');
    } finally {
      await chain.setKnobs('SOLANA', { lookupOutage: false });
    }
    const retried = await call('POST', '/transaction', body);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
  });
});
