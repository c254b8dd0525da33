// Fake money never moves real money: the composition root in sandbox mode (SANDBOX=1, the sandbox
// PIX rail) with Celo live on a local EVM node (anvil, test/support/anvil.ts) holding a real token
// in the hot wallet. What must hold:
// - POST /sandbox/pix-payments for an onramp on the live chain is refused (400 with a reason) and no
//   token leaves the hot wallet; POST /sandbox/deposits refuses a payout on it likewise;
// - a PIX payment of a sandbox charge that reached the transaction anyway (a delivery row that
//   exists, e.g. from before this release) is never delivered on the live chain: the transaction
//   fails (PAYMENT_FAILED), nothing is sent;
// - the chains file says which networks are mainnet: without `network` start-up is refused naming
//   the field, and a mainnet chain in sandbox mode is refused unless SANDBOX_WITH_MAINNET says so.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPublicClient, createTestClient, createWalletClient, erc20Abi, http, parseEther } from 'viem';
import type { Abi, Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { celo } from 'viem/chains';
import { outboxTopicDeliveries } from '../../src/actors/transaction-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { defaultCorridorsPath } from '../../src/config/corridors.ts';
import { readEnv } from '../../src/config/env.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { onrampDeliveriesCollection } from '../../src/onramp/delivery-worker.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { startAnvil, type PrivateAnvil } from '../support/anvil.ts';
import { deployTestDepositFactory } from '../support/celo-factory.ts';
import { depositSalt, forwarderAddress } from '../../src/chains/celo-forwarders.ts';
import { eventually } from '../support/eventually.ts';

const decimals = 6;
const artifact = JSON.parse(readFileSync(new URL('../fixtures/erc20/TestToken.json', import.meta.url), 'utf8')) as { abi: Abi; bytecode: Hex };
const signerEnv = 'TEST_SANDBOX_LIVE_CELO_KEY';
const hotWalletUnits = 1_000_000_000n; // 1,000 tokens of 6 decimals

let anvil: PrivateAnvil;
let token: Address;
let hotKey: Hex;
let hotWallet: Address;
let dataDir: string;
/** A deployed deposit forwarder factory (Celo addresses are handed out only once it is verified). */
let depositFactory: Address;

function newAddress(): Address {
  return privateKeyToAccount(generatePrivateKey()).address;
}

async function balanceOf(owner: Address): Promise<bigint> {
  const client = createPublicClient({ chain: celo, transport: http(anvil.url), cacheTime: 0 });
  return client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}

/** A chains file with Celo live on the local node; `network` as given (undefined: left out). */
function writeChainsFile(name: string, network: 'mainnet' | 'testnet' | undefined, factory: Address = depositFactory): string {
  const path = join(dataDir, name);
  writeFileSync(path, JSON.stringify({
    CELO: {
      ...(network === undefined ? {} : { network }),
      rpcUrl: anvil.url,
      chainId: 42220,
      depositAddress: newAddress(),
      depositFactory: factory,
      confirmations: 0,
      assets: { USDC: { contract: token, decimals } },
      signerSecretEnv: signerEnv,
    },
  }));
  return path;
}

function serviceEnv(extra: Record<string, string>): ReturnType<typeof readEnv> {
  return readEnv({
    DATA_DIR: join(dataDir, `store-${randomUUID()}`),
    ROLE: 'all',
    SANDBOX: '1',
    CORRIDORS_FILE: join(dataDir, 'corridors.json'),
    LOG_LEVEL: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug',
    PORT: '0',
    HOST: '127.0.0.1',
    GRPC_PORT: '0',
    ADMIN_TLS: 'off',
    PAYOUT_GRPC_PORT: '0',
    SHARDS: '4',
    DEMO_API_KEY: `demo_${randomUUID().replaceAll('-', '')}`,
    OPS_API_KEY: `ops_${randomUUID().replaceAll('-', '')}`,
    ...extra,
  });
}

before(async () => {
  anvil = await startAnvil({ chainId: 42220 });
  dataDir = mkdtempSync(join(tmpdir(), 'sandbox-live-chains-'));
  const deployer = privateKeyToAccount(generatePrivateKey());
  hotKey = generatePrivateKey();
  hotWallet = privateKeyToAccount(hotKey).address;
  const testClient = createTestClient({ mode: 'anvil', chain: celo, transport: http(anvil.url) });
  await testClient.setBalance({ address: deployer.address, value: parseEther('100') });
  await testClient.setBalance({ address: hotWallet, value: parseEther('100') });
  // The token's whole supply starts in the hot wallet: the money a fake payment must never move.
  const wallet = createWalletClient({ account: deployer, chain: celo, transport: http(anvil.url) });
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: ['Test USDC', 'USDC', decimals, hotWallet, hotWalletUnits] });
  const receipt = await createPublicClient({ chain: celo, transport: http(anvil.url) }).waitForTransactionReceipt({ hash, timeout: 10_000, pollingInterval: 50 });
  assert.ok(receipt.contractAddress != null, 'the token was deployed');
  token = receipt.contractAddress;
  depositFactory = await deployTestDepositFactory(anvil.url, 42220, hotKey);
  // The corridors quote the token this chain runs (the real mint is not deployed here).
  const corridors = JSON.parse(readFileSync(defaultCorridorsPath, 'utf8')) as { mints: Record<string, Record<string, { identifier: string }>> };
  const celoUsdc = corridors.mints['CELO']?.['USDC'];
  if (celoUsdc === undefined) throw new Error('the default corridors name USDC on CELO');
  celoUsdc.identifier = token;
  writeFileSync(join(dataDir, 'corridors.json'), JSON.stringify(corridors));
  process.env[signerEnv] = hotKey;
});

after(async () => {
  delete process.env[signerEnv];
  await anvil?.stop();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('sandbox mode with Celo live on a testnet', () => {
  let service: RunningService;
  let apiKey: string;

  before(async () => {
    const env = serviceEnv({ CHAINS_FILE: writeChainsFile('chains-testnet.json', 'testnet') });
    apiKey = env.DEMO_API_KEY ?? '';
    service = await startService(env);
  });

  after(async () => {
    await service?.stop();
  });

  async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`http://127.0.0.1:${service.port ?? 0}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'X-API-Key': apiKey },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** An accepted onramp on Celo (a PIX charge of the sandbox rail) to a fresh wallet. */
  async function acceptOnramp(): Promise<{ id: string; wallet: Address; context: Record<string, unknown> }> {
    const quoted = await call('POST', '/quote/onramp', { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network: 'CELO', payment_method: 'PIX' });
    assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
    const wallet = newAddress();
    const accepted = await call('POST', '/transaction', { quote_id: quoted.body['quote_id'], user_id: `u-${randomUUID()}`, account_number: wallet });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    return { id: String(accepted.body['id']), wallet, context: accepted.body['payment_context'] as Record<string, unknown> };
  }

  async function deliveryRows(transactionId: string): Promise<number> {
    return (await service.ctx.store.outboxPending(outboxTopicDeliveries, 1_000)).filter((row) => row.partitionKey === transactionId).length;
  }

  test('POST /sandbox/pix-payments on the live chain is refused with a reason; the transaction is not paid and no token moves', async () => {
    const { id, wallet } = await acceptOnramp();
    const paid = await call('POST', '/sandbox/pix-payments', { transaction_id: id });
    assert.equal(paid.status, 400, JSON.stringify(paid.body));
    assert.equal(paid.body['code'], 'invalid_request');
    assert.match(String(paid.body['reason']), /CELO is a live network/);
    assert.equal((await call('GET', `/transaction/${id}`)).body['status'], 'AWAITING_PAYMENT');
    assert.equal(await deliveryRows(id), 0, 'no delivery was requested');
    assert.equal(await balanceOf(wallet), 0n);
    assert.equal(await balanceOf(hotWallet), hotWalletUnits, 'the hot wallet keeps every token');
  });

  test('POST /sandbox/deposits on the live chain is refused with a reason', async () => {
    const quoted = await call('POST', '/quote', { amount: 50_000, crypto_currency: 'USDC', network: 'CELO', payment_method: 'BREB', target_currency: 'COP' });
    assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
    const accepted = await call('POST', '/transaction', { quote_id: quoted.body['quote_id'], user_id: `u-${randomUUID()}`, account_number: '3001234567' });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    const deposited = await call('POST', '/sandbox/deposits', { transaction_id: accepted.body['id'] });
    assert.equal(deposited.status, 400, JSON.stringify(deposited.body));
    assert.match(String(deposited.body['reason']), /CELO is a live network/);
    assert.equal((await call('GET', `/transaction/${String(accepted.body['id'])}`)).body['status'], 'AWAITING_PAYMENT');
  });

  test('short-next-deposit on the live chain is 409 rehearsal_not_applicable naming the network: no mark that no deposit could spend', async () => {
    const quoted = await call('POST', '/quote', { amount: 50_000, crypto_currency: 'USDC', network: 'CELO', payment_method: 'BREB', target_currency: 'COP' });
    assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
    const accepted = await call('POST', '/transaction', { quote_id: quoted.body['quote_id'], user_id: `u-${randomUUID()}`, account_number: '3001234567' });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    const armed = await call('POST', `/sandbox/transactions/${String(accepted.body['id'])}/short-next-deposit`);
    assert.equal(armed.status, 409, JSON.stringify(armed.body));
    assert.equal(armed.body['code'], 'rehearsal_not_applicable');
    assert.match(String(armed.body['reason']), /CELO/);
  });

  test('a sandbox PIX payment that reached the transaction anyway is never delivered on the live chain: PAYMENT_FAILED, nothing sent', async () => {
    const { id, wallet, context } = await acceptOnramp();
    // What an earlier release let through: the payment of the sandbox charge, applied to the
    // transaction (PROCESSING_PAYMENT and a delivery row) without the helper's check.
    const actors = await service.ctx.actorClient(`test-${randomUUID()}`);
    const amount = decimalFromExactString(String(context['amount']));
    const reply = await actors.ask<{ ok: boolean; status?: string }>('transaction', id, 'PixPaymentReceived', toJsonValue({ kind: 'PixPaymentReceived', providerPaymentId: `sbx-pix-${randomUUID()}`, amount }), {
      commandId: `test-pix-${id}`,
      timeoutMs: 20_000,
    });
    assert.deepEqual(reply, { ok: true, status: 'PROCESSING_PAYMENT' });
    await eventually(async () => {
      assert.equal((await call('GET', `/transaction/${id}`)).body['status'], 'PAYMENT_FAILED');
    }, 30_000);
    const recorded = await service.ctx.store.get(onrampDeliveriesCollection, id);
    assert.equal(recorded?.['outcome'], 'failed');
    assert.equal(recorded?.['reason'], 'sandbox_payment_on_live_chain');
    assert.equal(await balanceOf(wallet), 0n, 'the destination received nothing');
    assert.equal(await balanceOf(hotWallet), hotWalletUnits, 'the hot wallet keeps every token');
  });
});

describe('start-up with live chains', () => {
  test('a chains file without `network` is refused with a message naming the field', async () => {
    await assert.rejects(
      startService(serviceEnv({ CHAINS_FILE: writeChainsFile('chains-unlabelled.json', undefined) })),
      (error: Error) => /CELO\.network: .*"mainnet" or "testnet"/.test(error.message),
    );
  });

  test('a `network` other than "mainnet" or "testnet" is refused', async () => {
    const path = writeChainsFile('chains-misspelt.json', 'testnet');
    const file = JSON.parse(readFileSync(path, 'utf8')) as { CELO: Record<string, unknown> };
    file.CELO['network'] = 'main';
    writeFileSync(path, JSON.stringify(file));
    await assert.rejects(startService(serviceEnv({ CHAINS_FILE: path })), /CELO\.network: must be "mainnet" or "testnet"/);
  });

  test('sandbox mode with a mainnet chain is refused unless SANDBOX_WITH_MAINNET=i-understand', async () => {
    const chainsFile = writeChainsFile('chains-mainnet.json', 'mainnet');
    await assert.rejects(startService(serviceEnv({ CHAINS_FILE: chainsFile })), (error: Error) => /CELO is mainnet.*SANDBOX_WITH_MAINNET=i-understand/s.test(error.message));
    assert.throws(() => serviceEnv({ CHAINS_FILE: chainsFile, SANDBOX_WITH_MAINNET: 'yes' }), /SANDBOX_WITH_MAINNET/);
    const service = await startService(serviceEnv({ CHAINS_FILE: chainsFile, SANDBOX_WITH_MAINNET: 'i-understand' }));
    try {
      const corridors = await fetch(`http://127.0.0.1:${service.port ?? 0}/public/corridors`, { signal: AbortSignal.timeout(20_000) });
      assert.equal(corridors.status, 200);
    } finally {
      await service.stop();
    }
  });

  test('without sandbox mode a mainnet chain starts without the override', async () => {
    const service = await startService(serviceEnv({ CHAINS_FILE: writeChainsFile('chains-production.json', 'mainnet'), SANDBOX: '0', DATA_ENCRYPTION_KEY: randomBytes(32).toString('base64'), DATA_ENCRYPTION_KEY_ID: 'test-1' }));
    await service.stop();
  });
});

describe('Celo deposit addresses are handed out only from a verified factory', () => {
  test('a depositFactory with no factory deployed there stops start-up, naming it', async () => {
    const missing = newAddress();
    await assert.rejects(
      startService(serviceEnv({ CHAINS_FILE: writeChainsFile('chains-no-factory.json', 'testnet', missing) })),
      (error: Error) => error.message.includes('CELO') && error.message.includes(missing) && /no code/.test(error.message),
    );
    // A contract that is not our factory (the token) is refused too.
    await assert.rejects(
      startService(serviceEnv({ CHAINS_FILE: writeChainsFile('chains-not-a-factory.json', 'testnet', token) })),
      (error: Error) => error.message.includes('CELO') && /does not deploy this build's forwarder/.test(error.message),
    );
  });

  test('with the verified factory, a Celo payout gets the forwarder address of its transaction', async () => {
    const env = serviceEnv({ CHAINS_FILE: writeChainsFile('chains-factory.json', 'testnet') });
    const service = await startService(env);
    try {
      const call = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
        const response = await fetch(`http://127.0.0.1:${String(service.port)}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': env.DEMO_API_KEY ?? '' },
          body: JSON.stringify(body),
        });
        const json = (await response.json()) as Record<string, unknown>;
        assert.equal(response.status, 200, JSON.stringify(json));
        return json;
      };
      const quote = await call('/quote', { amount: 20_000, crypto_currency: 'USDC', network: 'CELO', payment_method: 'BREB', target_currency: 'COP' });
      const accepted = await call('/transaction', { quote_id: quote['quote_id'], user_id: `u-${randomUUID()}`, account_number: '@maria.perez' });
      const context = accepted['payment_context'] as Record<string, unknown>;
      assert.equal(context['depositAddress'], forwarderAddress(depositFactory, depositSalt(String(accepted['id']))));
    } finally {
      await service.stop();
    }
  });
});
