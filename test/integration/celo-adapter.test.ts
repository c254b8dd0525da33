// The Celo adapter against a real EVM node: anvil (chain id 42220) started for this file, real
// OpenZeppelin ERC-20 contracts deployed from test/fixtures/erc20/TestToken.json, the deposit
// forwarder factory deployed as an operator does (scripts/celo-deploy-factory.ts), real transfers
// looked up through viem, sends and sweeps journalled in a real LMDB store. Blocks are mined on
// demand (anvil_mine) to reach the confirmation depth.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { createPublicClient, createTestClient, createWalletClient, erc20Abi, http, parseEther } from 'viem';
import type { Abi, Address, Hex, PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PrivateKeyAccount } from 'viem/accounts';
import { celo } from 'viem/chains';
import { CeloAdapter } from '../../src/chains/celo.ts';
import { celoAdapterFromConfig } from '../../src/chains/celo-config.ts';
import { depositForwarderAbi, depositForwarderFactoryAbi } from '../../src/chains/celo-contracts.ts';
import { depositSalt } from '../../src/chains/celo-forwarders.ts';
import { deployDepositFactory } from '../../scripts/celo-deploy-factory.ts';
import type { LiveChainFactory } from '../../src/chains/chain-services.ts';
import { parseChainsFile } from '../../src/chains/config.ts';
import type { CeloAdapterOptions } from '../../src/chains/celo.ts';
import { sendJournalOnStore } from '../../src/chains/chains.ts';
import type { SendRequest } from '../../src/chains/chains.ts';
import { decimalFromString, toFixedString } from '../../src/domain/money.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { startAnvil } from '../support/anvil.ts';
import type { PrivateAnvil } from '../support/anvil.ts';
import { startLaggingRpc } from '../support/lagging-rpc.ts';
import type { LaggingRpc } from '../support/lagging-rpc.ts';
import { teardown } from '../support/teardown.ts';
import { eventually } from '../support/eventually.ts';

const decimals = 6;
const confirmations = 3;
const signerEnv = 'TEST_CELO_HOT_WALLET';
const artifact = JSON.parse(readFileSync(new URL('../fixtures/erc20/TestToken.json', import.meta.url), 'utf8')) as { abi: Abi; bytecode: Hex };
const oddTokens = JSON.parse(readFileSync(new URL('../fixtures/erc20/OddTokens.json', import.meta.url), 'utf8')) as {
  contracts: { contractName: 'NoReturnToken' | 'FalseReturnToken'; abi: Abi; bytecode: Hex }[];
};

let anvil: PrivateAnvil;
/** The same node behind a load balancer whose receipt lookups may reach a lagging backend. */
let lagging: LaggingRpc;
/** The adapters' clock (the injected `nowMs`): settle windows are crossed by moving it. */
let clockMs = Date.now();
let publicClient: PublicClient;
let testClient: ReturnType<typeof createTestClient>;
let store: LmdbStore;
let storeDir: string;
let deployer: PrivateKeyAccount;
let partner: PrivateKeyAccount;
let hotKey: Hex;
let hotWallet: PrivateKeyAccount;
let deposit: Address;
let usdc: Address;
let usdt: Address;
let otherToken: Address;
let factoryAdmin: PrivateKeyAccount;
let forwarderFactory: Address;

function adapterOptions(overrides: Partial<CeloAdapterOptions> = {}): CeloAdapterOptions {
  return {
    rpcUrl: anvil.url,
    chainId: 42220,
    depositAddress: deposit,
    depositFactory: forwarderFactory,
    confirmations,
    assets: { USDC: { contract: usdc, decimals }, USDT: { contract: usdt, decimals } },
    signerSecretEnv: signerEnv,
    env: { [signerEnv]: hotKey },
    journal: sendJournalOnStore(store),
    rpcTimeoutMs: 5_000,
    nowMs: () => clockMs,
    ...overrides,
  };
}

function wallet(account: PrivateKeyAccount): ReturnType<typeof createWalletClient<ReturnType<typeof http>, typeof celo, PrivateKeyAccount>> {
  return createWalletClient({ account, chain: celo, transport: http(anvil.url) });
}

async function mined(hash: Hex): Promise<{ status: 'success' | 'reverted' }> {
  return publicClient.waitForTransactionReceipt({ hash, timeout: 10_000, pollingInterval: 50 });
}

async function deployToken(symbol: string): Promise<Address> {
  const hash = await wallet(deployer).deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    args: [`Test ${symbol}`, symbol, decimals, deployer.address, 1_000_000_000_000n],
  });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 10_000, pollingInterval: 50 });
  assert.ok(receipt.contractAddress != null);
  return receipt.contractAddress;
}

async function tokenTransfer(from: PrivateKeyAccount, token: Address, to: Address, amount: bigint, gas?: bigint): Promise<Hex> {
  const hash = await wallet(from).writeContract({
    address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount], ...(gas === undefined ? {} : { gas }),
  });
  await mined(hash);
  return hash;
}

async function balanceOf(token: Address, owner: Address): Promise<bigint> {
  return publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}

async function mine(blocks: number): Promise<void> {
  await testClient.mine({ blocks });
}

function newAddress(): Address {
  return privateKeyToAccount(generatePrivateKey()).address;
}

function refund(idempotencyKey: string, destination: Address, amount: string, asset: SendRequest['asset'] = 'USDC'): SendRequest {
  return { network: 'CELO', asset, amount: decimalFromString(amount, decimals), destination, idempotencyKey };
}

function show(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
}

before(async () => {
  anvil = await startAnvil({ chainId: 42220 });
  lagging = await startLaggingRpc({ upstreamUrl: anvil.url });
  publicClient = createPublicClient({ chain: celo, transport: http(anvil.url), cacheTime: 0 }) as PublicClient;
  testClient = createTestClient({ mode: 'anvil', chain: celo, transport: http(anvil.url) });
  storeDir = mkdtempSync(join(tmpdir(), 'celo-adapter-'));
  store = new LmdbStore({ dir: storeDir });
  await store.init();
  deployer = privateKeyToAccount(generatePrivateKey());
  partner = privateKeyToAccount(generatePrivateKey());
  hotKey = generatePrivateKey();
  hotWallet = privateKeyToAccount(hotKey);
  deposit = newAddress();
  factoryAdmin = privateKeyToAccount(generatePrivateKey());
  for (const account of [deployer, partner, hotWallet, factoryAdmin]) {
    await testClient.setBalance({ address: account.address, value: parseEther('100') });
  }
  usdc = await deployToken('USDC');
  usdt = await deployToken('USDT');
  otherToken = await deployToken('FAKE');
  for (const token of [usdc, usdt, otherToken]) await tokenTransfer(deployer, token, partner.address, 1_000_000_000n);
  await tokenTransfer(deployer, usdc, hotWallet.address, 100_000_000n);
  forwarderFactory = (await deployDepositFactory({ rpcUrl: anvil.url, chainId: 42220, hotWalletKey: hotKey, admin: factoryAdmin.address })).factory;
});

after(() => teardown(
  () => store?.close(),
  () => { if (storeDir !== undefined) rmSync(storeDir, { recursive: true, force: true }); },
  () => lagging?.close(),
  () => anvil?.stop(),
));

describe('verify: a reported Celo deposit', () => {
  test('reports exact, short and long amounts as sent, with the sender for refunds', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    for (const [baseUnits, text] of [[10_500_000n, '10.500000'], [10_499_999n, '10.499999'], [10_500_001n, '10.500001']] as const) {
      const hash = await tokenTransfer(partner, usdc, deposit, baseUnits);
      await mine(confirmations - 1);
      const result = await adapter.verify(hash);
      assert.equal(result.status, 'found', show(result));
      assert.ok(result.status === 'found');
      assert.equal(result.transfers.length, 1);
      const [transfer] = result.transfers;
      assert.ok(transfer !== undefined);
      assert.equal(transfer.network, 'CELO');
      assert.equal(transfer.onChainId, hash);
      assert.equal(transfer.asset, 'USDC');
      assert.equal(toFixedString(transfer.amount), text);
      assert.equal(transfer.sender, partner.address);
      assert.equal(transfer.memo, null);
      assert.ok(transfer.observedAtMs > 0);
    }
  });

  test('a USDT deposit is reported as USDT', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const hash = await tokenTransfer(partner, usdt, deposit, 25_000_000n);
    await mine(confirmations - 1);
    const result = await adapter.verify(hash);
    assert.ok(result.status === 'found', show(result));
    assert.equal(result.transfers[0]?.asset, 'USDT');
    assert.equal(toFixedString(result.transfers[0].amount), '25.000000');
  });

  test('a token contract that is not configured is invalid, even to the deposit address', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const hash = await tokenTransfer(partner, otherToken, deposit, 10_000_000n);
    await mine(confirmations - 1);
    assert.deepEqual(await adapter.verify(hash), { status: 'invalid', reason: 'the token contract is not an accepted asset' });
  });

  test('USDC sent to another address than the deposit address is invalid', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const hash = await tokenTransfer(partner, usdc, newAddress(), 10_000_000n);
    await mine(confirmations - 1);
    assert.deepEqual(await adapter.verify(hash), { status: 'invalid', reason: 'the transfer goes to another address than the deposit address' });
  });

  test('a reverted transaction is invalid', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    // More than the partner holds; an explicit gas limit skips estimation, so it is mined and reverts.
    const hash = await wallet(partner).writeContract({
      address: usdc, abi: erc20Abi, functionName: 'transfer', args: [deposit, 10n ** 15n], gas: 100_000n,
    });
    assert.equal((await mined(hash)).status, 'reverted');
    await mine(confirmations - 1);
    assert.deepEqual(await adapter.verify(hash), { status: 'invalid', reason: 'the transaction reverted' });
  });

  test('a deposit is not found until it is confirmations deep', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const hash = await tokenTransfer(partner, usdc, deposit, 1_000_000n);
    assert.deepEqual(await adapter.verify(hash), { status: 'not_found', reason: 'not yet confirmed (1 of 3 confirmations)' });
    await mine(1);
    assert.deepEqual(await adapter.verify(hash), { status: 'not_found', reason: 'not yet confirmed (2 of 3 confirmations)' });
    await mine(1);
    assert.equal((await adapter.verify(hash)).status, 'found');
  });

  test('after a rotation, a deposit to the previous deposit address still verifies', async () => {
    const adapter = new CeloAdapter(adapterOptions({ depositAddress: newAddress(), previousDepositAddresses: [deposit.toLowerCase()] }));
    const hash = await tokenTransfer(partner, usdc, deposit, 2_000_000n);
    await mine(confirmations - 1);
    assert.equal((await adapter.verify(hash)).status, 'found');
  });

  test('the adapter built from a CHAINS_FILE section verifies the same way', async () => {
    const parsed = parseChainsFile({
      CELO: {
        network: 'testnet',
        rpcUrl: anvil.url,
        chainId: 42220,
        depositAddress: deposit,
        depositFactory: forwarderFactory,
        confirmations,
        assets: { USDC: { contract: usdc, decimals }, USDT: { contract: usdt, decimals } },
        signerSecretEnv: signerEnv,
      },
    });
    assert.ok(parsed.ok && parsed.file.CELO !== undefined, JSON.stringify(parsed));
    // Exactly as the composition root wires it (src/chains/live-chains.ts).
    const factory: LiveChainFactory = (setup, ctx) => {
      if (setup.network !== 'CELO') throw new Error(`CELO factory given ${setup.network}`);
      return { adapter: celoAdapterFromConfig(setup.config, { journal: sendJournalOnStore(ctx.store), nowMs: () => ctx.clock.nowMs() }) };
    };
    const context = { store, clock: { nowMs: () => Date.now() } } as unknown as ServiceContext;
    const { adapter } = factory({
      mode: 'live', network: 'CELO', config: parsed.file.CELO, depositAddress: deposit,
      chainId: 'eip155:42220', publicRpcUrl: null, assets: {},
    }, context);
    const hash = await tokenTransfer(partner, usdt, deposit, 3_000_000n);
    await mine(confirmations - 1);
    const result = await adapter.verify(hash);
    assert.ok(result.status === 'found', show(result));
    assert.equal(result.transfers[0]?.asset, 'USDT');
  });

  test('an unknown hash is not found; text that is not a hash is invalid', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    assert.deepEqual(await adapter.verify(`0x${randomBytes(32).toString('hex')}`), {
      status: 'not_found', reason: 'transaction not found (or not mined yet)',
    });
    assert.equal((await adapter.verify('0x1234')).status, 'invalid');
    assert.equal((await adapter.verify(randomBytes(32).toString('hex'))).status, 'invalid');
  });

  test('an RPC node of another chain is refused, not trusted', async () => {
    const adapter = new CeloAdapter(adapterOptions({ chainId: 44787 }));
    await assert.rejects(adapter.verify(`0x${randomBytes(32).toString('hex')}`), /serves chain id 42220, configured 44787/);
  });
});

describe('send: tokens from the hot wallet, once per idempotency key', () => {
  test('repeated and concurrent calls with one key make one transfer, confirmed only at depth', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    const nonceBefore = await publicClient.getTransactionCount({ address: hotWallet.address });
    const first = await adapter.send(refund('refund-once', destination, '5.5'));
    assert.equal(first.status, 'pending', show(first));
    const again = await Promise.all([1, 2, 3].map(async () => adapter.send(refund('refund-once', destination, '5.5'))));
    for (const result of again) assert.deepEqual(result, first);
    await mine(confirmations - 1);
    const confirmed = await adapter.send(refund('refund-once', destination, '5.5'));
    assert.ok(first.status === 'pending');
    assert.deepEqual(confirmed, { status: 'confirmed', onChainId: first.onChainId });
    // A restarted process (new adapter, same store) answers the same and sends nothing.
    assert.deepEqual(await new CeloAdapter(adapterOptions()).send(refund('refund-once', destination, '5.5')), confirmed);
    assert.equal(await balanceOf(usdc, destination), 5_500_000n);
    assert.equal(await publicClient.getTransactionCount({ address: hotWallet.address }), nonceBefore + 1);
  });

  test('concurrent first calls with one key sign once', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    const results = await Promise.all([1, 2, 3].map(async () => adapter.send(refund('refund-race', destination, '1.25'))));
    const ids = new Set(results.map((result) => (result.status === 'failed' ? result.reason : result.onChainId)));
    assert.equal(ids.size, 1, show(results));
    await mine(confirmations);
    assert.equal(await balanceOf(usdc, destination), 1_250_000n);
  });

  test('different keys sent back to back get their own nonces and all land', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    const results = await Promise.all(['a', 'b', 'c'].map(async (suffix) => adapter.send(refund(`refund-many-${suffix}`, destination, '1'))));
    assert.equal(new Set(results.map((result) => (result.status === 'failed' ? result.reason : result.onChainId))).size, 3, show(results));
    await mine(confirmations);
    assert.equal(await balanceOf(usdc, destination), 3_000_000n);
  });

  test('the same key with another amount is refused, not sent', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    assert.equal((await adapter.send(refund('refund-content', destination, '2'))).status, 'pending');
    assert.deepEqual(await adapter.send(refund('refund-content', destination, '3')), {
      status: 'failed', reason: 'idempotency key already used with a different asset, amount or destination', retryable: false,
    });
    await mine(confirmations);
    assert.equal(await balanceOf(usdc, destination), 2_000_000n);
  });

  test('a transaction dropped from the mempool is rebroadcast as the same bytes', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    await testClient.setAutomine(false);
    try {
      const first = await adapter.send(refund('refund-dropped', destination, '4'));
      assert.ok(first.status === 'pending', show(first));
      await testClient.dropTransaction({ hash: first.onChainId as Hex });
      assert.deepEqual(await adapter.send(refund('refund-dropped', destination, '4')), first);
      await mine(confirmations);
      assert.deepEqual(await adapter.send(refund('refund-dropped', destination, '4')), { status: 'confirmed', onChainId: first.onChainId });
    } finally {
      await testClient.setAutomine(true);
    }
    assert.equal(await balanceOf(usdc, destination), 4_000_000n);
  });

  test('when another transaction used its nonce, a new transaction is built, and only it lands', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    await testClient.setAutomine(false);
    let first;
    try {
      first = await adapter.send(refund('refund-nonce', destination, '3'));
      assert.ok(first.status === 'pending', show(first));
      const stolen = await publicClient.getTransaction({ hash: first.onChainId as Hex });
      await testClient.dropTransaction({ hash: first.onChainId as Hex });
      // The operator (or another tool) spends the same nonce from the hot wallet.
      await wallet(hotWallet).sendTransaction({ to: hotWallet.address, value: 0n, nonce: stolen.nonce });
      await mine(confirmations);
      // Not rebuilt at once: a lagging receipt backend could still be hiding it (next test).
      assert.deepEqual(await adapter.send(refund('refund-nonce', destination, '3')), first);
      clockMs += 31_000;
      const rebuilt = await adapter.send(refund('refund-nonce', destination, '3'));
      assert.ok(rebuilt.status === 'pending', show(rebuilt));
      assert.notEqual(rebuilt.onChainId, first.onChainId);
      await mine(confirmations);
      assert.deepEqual(await adapter.send(refund('refund-nonce', destination, '3')), { status: 'confirmed', onChainId: rebuilt.onChainId });
    } finally {
      await testClient.setAutomine(true);
    }
    assert.equal(await balanceOf(usdc, destination), 3_000_000n);
  });

  test('a transfer that was mined but whose receipt a lagging backend does not show yet is not sent a second time', async () => {
    const adapter = new CeloAdapter(adapterOptions({ rpcUrl: lagging.url }));
    const destination = newAddress();
    const request = refund('refund-lagging', destination, '2.5');
    const nonceBefore = await publicClient.getTransactionCount({ address: hotWallet.address });
    lagging.setReceiptLag(100);
    let first;
    try {
      first = await adapter.send(request);
      assert.equal(first.status, 'pending', 'mined, but the receipt backend has not seen it');
      assert.equal(await balanceOf(usdc, destination), 2_500_000n);
      // Deep enough for the nonce to count as used at confirmation depth; the receipt is still hidden.
      await mine(confirmations);
      assert.deepEqual(await adapter.send(request), first, 'nonce used and receipt unfound: not rebuilt at once');
      clockMs += 10_000;
      // Another process (a restarted refund worker) counts from the same journaled first sighting.
      assert.deepEqual(await new CeloAdapter(adapterOptions({ rpcUrl: lagging.url })).send(request), first, 'still within the settling window');
      assert.ok(lagging.hiddenReceipts() > 0, 'the lag was in play');
    } finally {
      lagging.setReceiptLag(0); // the backend catches up
    }
    assert.ok(first.status === 'pending');
    assert.deepEqual(await adapter.send(request), { status: 'confirmed', onChainId: first.onChainId });
    clockMs += 60_000;
    assert.deepEqual(await adapter.send(request), { status: 'confirmed', onChainId: first.onChainId });
    assert.equal(await balanceOf(usdc, destination), 2_500_000n, 'one refund, not two');
    assert.equal(await publicClient.getTransactionCount({ address: hotWallet.address }), nonceBefore + 1);
    assert.equal(await store.get('chain_sends', `CELO:${request.idempotencyKey}:1`), null, 'no second transaction was ever signed');
  });

  test('a hot wallet without the token is refused before signing; after a top-up the same key sends', async () => {
    const poorKey = generatePrivateKey();
    const poor = privateKeyToAccount(poorKey);
    await testClient.setBalance({ address: poor.address, value: parseEther('1') });
    const adapter = new CeloAdapter(adapterOptions({ env: { [signerEnv]: poorKey } }));
    const destination = newAddress();
    const refused = await adapter.send(refund('refund-poor', destination, '2'));
    assert.deepEqual(refused, { status: 'failed', reason: 'the transfer would revert (is the hot wallet funded with the token?)', retryable: true });
    assert.equal(await publicClient.getTransactionCount({ address: poor.address }), 0);
    await tokenTransfer(deployer, usdc, poor.address, 5_000_000n);
    const sent = await adapter.send(refund('refund-poor', destination, '2'));
    assert.equal(sent.status, 'pending', show(sent));
    await mine(confirmations);
    assert.equal((await adapter.send(refund('refund-poor', destination, '2'))).status, 'confirmed');
    assert.equal(await balanceOf(usdc, destination), 2_000_000n);
  });

  test('requests the adapter cannot honour are refused before anything is signed', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const destination = newAddress();
    const tooPrecise = { ...refund('refund-precise', destination, '1'), amount: decimalFromString('1.0000001', 7) };
    assert.deepEqual(await adapter.send(tooPrecise), { status: 'failed', reason: 'amount has more than 6 decimals', retryable: false });
    assert.equal((await adapter.send({ ...refund('refund-bad', destination, '1'), destination: 'G-not-evm' })).status, 'failed');
    assert.equal((await adapter.send({ ...refund('refund-net', destination, '1'), network: 'SOLANA' })).status, 'failed');
    const keyless = new CeloAdapter(adapterOptions({ env: {} }));
    assert.deepEqual(await keyless.send(refund('refund-keyless', destination, '1')), {
      status: 'failed', reason: 'the CELO hot wallet key is not configured', retryable: false,
    });
    assert.throws(() => new CeloAdapter(adapterOptions({ env: { [signerEnv]: 'not a key' } })), (error: Error) => {
      assert.match(error.message, new RegExp(signerEnv));
      assert.doesNotMatch(error.message, /not a key/);
      return true;
    });
  });
});

function sweepOf(transactionId: string, idempotencyKey: string, asset: SendRequest['asset'] = 'USDC'): { transactionId: string; asset: SendRequest['asset']; idempotencyKey: string } {
  return { transactionId, asset, idempotencyKey };
}

async function nativeBalance(address: Address): Promise<bigint> {
  return publicClient.getBalance({ address });
}

/** Sends a transaction that is mined even if it reverts (explicit gas skips estimation). */
async function forcedWrite(from: PrivateKeyAccount, request: { address: Address; abi: Abi; functionName: string; args: readonly unknown[] }): Promise<'success' | 'reverted'> {
  const hash = await wallet(from).writeContract({ ...request, gas: 500_000n } as Parameters<ReturnType<typeof wallet>['writeContract']>[0]);
  return (await mined(hash)).status;
}

describe('per-transaction deposit addresses: where a partner funds a transaction', () => {
  test('addressFor is where the factory deploys the forwarder; stable across processes; one per transaction', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const transactionId = randomUUID();
    const address = adapter.addressFor(transactionId);
    assert.equal(new CeloAdapter(adapterOptions()).addressFor(transactionId), address, 'another process computes the same address');
    assert.notEqual(adapter.addressFor(randomUUID()), address);
    const onChain = await publicClient.readContract({
      address: forwarderFactory, abi: depositForwarderFactoryAbi, functionName: 'forwarderAddress', args: [depositSalt(transactionId)],
    });
    assert.equal(onChain, address);
    assert.equal(await publicClient.getCode({ address }), undefined, 'nothing is deployed before a sweep');
    const swept = await adapter.sweep(sweepOf(transactionId, `sweep-deploy-${transactionId}`));
    assert.notEqual(swept.status, 'failed', `the sweep: ${JSON.stringify(swept)}`);
    // A sweep whose receipt lagged is 'pending' (it is mined all the same): wait for the code.
    await eventually(async () => assert.ok(((await publicClient.getCode({ address })) ?? '0x').length > 2, 'the sweep deployed the forwarder at that address'), 10_000);
    // Two spellings of one id must never give two addresses: only the canonical form is accepted.
    assert.throws(() => adapter.addressFor(transactionId.toUpperCase()), /not a canonical transaction id/);
  });

  test("a deposit is found by verifyInto for its transaction's address only, and listed by transfersInto", async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const mine1 = adapter.addressFor(randomUUID());
    const other = adapter.addressFor(randomUUID());
    const hash = await tokenTransfer(partner, usdc, mine1, 12_500_000n);
    assert.equal((await adapter.verifyInto(hash, mine1)).status, 'not_found', 'not before the confirmation depth');
    assert.deepEqual(await adapter.transfersInto(mine1, 10), [], 'not listed before the confirmation depth');
    await mine(confirmations - 1);
    const found = await adapter.verifyInto(hash, mine1.toLowerCase());
    assert.ok(found.status === 'found', show(found));
    assert.equal(found.transfers.length, 1);
    assert.equal(found.transfers[0]?.asset, 'USDC');
    assert.equal(toFixedString(found.transfers[0].amount), '12.500000');
    assert.equal(found.transfers[0].sender, partner.address);
    assert.equal(found.transfers[0].onChainId, hash);
    assert.deepEqual(await adapter.verifyInto(hash, other), {
      status: 'invalid', reason: 'the transfer goes to another address than the deposit address',
    });
    assert.equal((await adapter.verify(hash)).status, 'invalid', 'the legacy shared address did not receive it');
    assert.deepEqual(await adapter.transfersInto(mine1, 10), [hash]);
    assert.deepEqual(await adapter.transfersInto(other, 10), []);
    assert.deepEqual(await adapter.verifyInto(hash, 'not-an-address'), { status: 'invalid', reason: 'not a Celo deposit address' });
  });

  test('transfersInto lists newest first, at most limit, one entry per transaction, configured tokens only', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const address = adapter.addressFor(randomUUID());
    const older = await tokenTransfer(partner, usdt, address, 1_000_000n);
    await tokenTransfer(partner, otherToken, address, 1_000_000n);
    const newer = await tokenTransfer(partner, usdc, address, 2_000_000n);
    await mine(confirmations - 1);
    assert.deepEqual(await adapter.transfersInto(address, 10), [newer, older]);
    assert.deepEqual(await adapter.transfersInto(address, 1), [newer]);
    await assert.rejects(adapter.transfersInto(address, 0), RangeError);
  });

  test('transfersInto looks back depositScanBlocks from the confirmed head; verifyInto has no window', async () => {
    const adapter = new CeloAdapter(adapterOptions({ depositScanBlocks: 5, logBlocksPerRequestMax: 2 }));
    const address = adapter.addressFor(randomUUID());
    const hash = await tokenTransfer(partner, usdc, address, 1_000_000n);
    await mine(confirmations - 1);
    assert.deepEqual(await adapter.transfersInto(address, 10), [hash], 'found across several bounded requests');
    await mine(5);
    assert.deepEqual(await adapter.transfersInto(address, 10), [], 'older than the window');
    assert.equal((await adapter.verifyInto(hash, address)).status, 'found');
  });
});

describe('sweep: a deposit address emptied into the hot wallet, once per idempotency key', () => {
  test('moves the whole balance to the hot wallet, which pays the gas; the address never holds CELO; a later deposit is swept too', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const transactionId = randomUUID();
    const address = adapter.addressFor(transactionId);
    await tokenTransfer(partner, usdc, address, 7_250_001n);
    await mine(confirmations - 1);
    const hotTokensBefore = await balanceOf(usdc, hotWallet.address);
    const hotNativeBefore = await nativeBalance(hotWallet.address);
    assert.equal(await nativeBalance(address), 0n);
    const first = await adapter.sweep(sweepOf(transactionId, `sweep-${transactionId}-1`));
    assert.ok(first.status === 'pending', show(first));
    await mine(confirmations - 1);
    assert.deepEqual(await adapter.sweep(sweepOf(transactionId, `sweep-${transactionId}-1`)), { status: 'confirmed', onChainId: first.onChainId });
    assert.equal(await balanceOf(usdc, address), 0n);
    assert.equal(await balanceOf(usdc, hotWallet.address), hotTokensBefore + 7_250_001n);
    const receipt = await publicClient.getTransactionReceipt({ hash: first.onChainId as Hex });
    assert.equal(receipt.from.toLowerCase(), hotWallet.address.toLowerCase());
    assert.equal(receipt.to?.toLowerCase(), forwarderFactory.toLowerCase());
    assert.equal(await nativeBalance(hotWallet.address), hotNativeBefore - receipt.gasUsed * receipt.effectiveGasPrice, 'the hot wallet paid the gas');
    assert.equal(await nativeBalance(address), 0n);

    // The same address funded again (a second deposit) is swept by the next key, through the same forwarder.
    await tokenTransfer(partner, usdc, address, 3_000_000n);
    await mine(confirmations - 1);
    const second = await adapter.sweep(sweepOf(transactionId, `sweep-${transactionId}-2`));
    assert.ok(second.status !== 'failed', show(second));
    assert.notEqual(second.onChainId, first.onChainId);
    await mine(confirmations - 1);
    assert.equal((await adapter.sweep(sweepOf(transactionId, `sweep-${transactionId}-2`))).status, 'confirmed');
    assert.equal(await balanceOf(usdc, address), 0n);
    assert.equal(await balanceOf(usdc, hotWallet.address), hotTokensBefore + 10_250_001n);
    assert.equal(await nativeBalance(address), 0n);
  });

  test('repeated, concurrent and restarted sweeps with one key send one transaction', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const transactionId = randomUUID();
    const address = adapter.addressFor(transactionId);
    await tokenTransfer(partner, usdt, address, 4_000_000n);
    await mine(confirmations - 1);
    const nonceBefore = await publicClient.getTransactionCount({ address: hotWallet.address });
    const key = `sweep-race-${transactionId}`;
    const results = await Promise.all([1, 2, 3].map(async () => adapter.sweep(sweepOf(transactionId, key, 'USDT'))));
    const ids = new Set(results.map((result) => (result.status === 'failed' ? result.reason : result.onChainId)));
    assert.equal(ids.size, 1, show(results));
    await mine(confirmations);
    const [onChainId] = [...ids];
    assert.deepEqual(await new CeloAdapter(adapterOptions()).sweep(sweepOf(transactionId, key, 'USDT')), { status: 'confirmed', onChainId });
    assert.equal(await publicClient.getTransactionCount({ address: hotWallet.address }), nonceBefore + 1);
    assert.equal(await balanceOf(usdt, address), 0n);
  });

  test('the same key for another transaction or asset is refused, not swept', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const transactionId = randomUUID();
    const key = `sweep-content-${transactionId}`;
    assert.notEqual((await adapter.sweep(sweepOf(transactionId, key))).status, 'failed');
    const refusal = { status: 'failed', reason: 'idempotency key already used with a different asset, amount or destination', retryable: false };
    assert.deepEqual(await adapter.sweep(sweepOf(randomUUID(), key)), refusal);
    assert.deepEqual(await adapter.sweep(sweepOf(transactionId, key, 'USDT')), refusal);
    assert.deepEqual(await adapter.sweep(sweepOf('not-a-transaction-id', 'sweep-bad-id')), {
      status: 'failed', reason: 'not a canonical transaction id', retryable: false,
    });
  });

  test('nobody can send the funds anywhere but the treasury, calling the forwarder or the factory directly', async () => {
    const adapter = new CeloAdapter(adapterOptions());
    const transactionId = randomUUID();
    const salt = depositSalt(transactionId);
    const address = adapter.addressFor(transactionId);
    const partnerBefore = await balanceOf(usdc, partner.address);
    await tokenTransfer(partner, usdc, address, 5_000_000n);
    const hotBefore = await balanceOf(usdc, hotWallet.address);
    // Anyone may call sweep (they pay the gas), but the funds go to the treasury, the hot wallet.
    assert.equal(await forcedWrite(partner, { address: forwarderFactory, abi: depositForwarderFactoryAbi as Abi, functionName: 'sweep', args: [salt, usdc] }), 'success');
    assert.equal(await balanceOf(usdc, hotWallet.address), hotBefore + 5_000_000n);
    // The forwarder obeys its factory only.
    await tokenTransfer(partner, usdc, address, 1_000_000n);
    assert.equal(await forcedWrite(partner, { address, abi: depositForwarderAbi as Abi, functionName: 'forward', args: [usdc, partner.address] }), 'reverted');
    assert.equal(await balanceOf(usdc, address), 1_000_000n);
    // Only the admin may move the treasury or hand over its role.
    for (const [functionName, args] of [['setTreasury', [partner.address]], ['transferAdmin', [partner.address]], ['acceptAdmin', []]] as const) {
      assert.equal(await forcedWrite(partner, { address: forwarderFactory, abi: depositForwarderFactoryAbi as Abi, functionName, args }), 'reverted', functionName);
    }
    assert.equal(await publicClient.readContract({ address: forwarderFactory, abi: depositForwarderFactoryAbi, functionName: 'treasury' }), hotWallet.address);
    assert.equal(await balanceOf(usdc, partner.address), partnerBefore - 6_000_000n, 'the partner got nothing back');
    // The service's own sweep still empties it.
    const swept = await adapter.sweep(sweepOf(transactionId, `sweep-after-attack-${transactionId}`));
    assert.notEqual(swept.status, 'failed', show(swept));
    // A sweep may answer once it is sent, before it is mined.
    await eventually(async () => assert.equal(await balanceOf(usdc, address), 0n), 10_000);
  });

  test('a rotated hot wallet: the admin moves the treasury, old addresses sweep to the new wallet, the old key is refused', async () => {
    const oldKey = generatePrivateKey();
    const newKey = generatePrivateKey();
    const [oldHot, newHot] = [privateKeyToAccount(oldKey), privateKeyToAccount(newKey)];
    for (const account of [oldHot, newHot]) await testClient.setBalance({ address: account.address, value: parseEther('10') });
    const rotating = (await deployDepositFactory({ rpcUrl: anvil.url, chainId: 42220, hotWalletKey: oldKey, admin: factoryAdmin.address })).factory;
    const before = new CeloAdapter(adapterOptions({ depositFactory: rotating, env: { [signerEnv]: oldKey } }));
    const after = new CeloAdapter(adapterOptions({ depositFactory: rotating, env: { [signerEnv]: newKey } }));
    const transactionId = randomUUID();
    const address = before.addressFor(transactionId);
    assert.equal(after.addressFor(transactionId), address, 'a hot wallet rotation moves no deposit address');
    await tokenTransfer(partner, usdc, address, 2_500_000n);
    assert.equal(await forcedWrite(factoryAdmin, { address: rotating, abi: depositForwarderFactoryAbi as Abi, functionName: 'setTreasury', args: [newHot.address] }), 'success');
    const oldNonce = await publicClient.getTransactionCount({ address: oldHot.address });
    const refused = await before.sweep(sweepOf(transactionId, `sweep-rotated-old-${transactionId}`));
    assert.ok(refused.status === 'failed' && refused.retryable, show(refused));
    assert.match(refused.reason, /treasury/);
    assert.equal(await publicClient.getTransactionCount({ address: oldHot.address }), oldNonce, 'the old key signed nothing');
    const swept = await after.sweep(sweepOf(transactionId, `sweep-rotated-new-${transactionId}`));
    assert.notEqual(swept.status, 'failed', show(swept));
    // A sweep may answer once it is sent, before it is mined (a loaded machine showed the gap).
    await eventually(async () => assert.equal(await balanceOf(usdc, newHot.address), 2_500_000n), 10_000);
    assert.equal(await balanceOf(usdc, oldHot.address), 0n);
  });

  test('a depositFactory that is not our factory is refused before any address is trusted or swept', async () => {
    for (const [notFactory, pattern] of [[newAddress(), /has no code/], [usdc, /forwarder/]] as const) {
      const adapter = new CeloAdapter(adapterOptions({ depositFactory: notFactory }));
      await assert.rejects(adapter.checkDepositFactory(), pattern);
      await assert.rejects(adapter.transfersInto(adapter.addressFor(randomUUID()), 10), pattern);
      const result = await adapter.sweep(sweepOf(randomUUID(), `sweep-wrong-factory-${randomUUID()}`));
      assert.ok(result.status === 'failed', show(result));
      assert.match(result.reason, pattern);
    }
    await new CeloAdapter(adapterOptions()).checkDepositFactory();
  });
});

describe('sweep: tokens that bend ERC-20', () => {
  async function deployOdd(name: 'NoReturnToken' | 'FalseReturnToken'): Promise<{ address: Address; abi: Abi }> {
    const odd = oddTokens.contracts.find((contract) => contract.contractName === name);
    assert.ok(odd !== undefined);
    const hash = await wallet(deployer).deployContract({ abi: odd.abi, bytecode: odd.bytecode });
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 10_000, pollingInterval: 50 });
    assert.ok(receipt.contractAddress != null);
    return { address: receipt.contractAddress, abi: odd.abi };
  }

  test('a transfer without a return value is swept; one that returns false is refused and the funds stay', async () => {
    const noReturn = await deployOdd('NoReturnToken');
    const falseReturn = await deployOdd('FalseReturnToken');
    const adapter = new CeloAdapter(adapterOptions({
      assets: { USDC: { contract: noReturn.address, decimals }, USDT: { contract: falseReturn.address, decimals } },
    }));
    const transactionId = randomUUID();
    const address = adapter.addressFor(transactionId);
    for (const token of [noReturn, falseReturn]) {
      assert.equal(await forcedWrite(deployer, { address: token.address, abi: token.abi, functionName: 'mint', args: [address, 9_000_000n] }), 'success');
    }
    await mine(confirmations - 1);
    const sweepKey = `sweep-no-return-${transactionId}`;
    const swept = await adapter.sweep(sweepOf(transactionId, sweepKey, 'USDC'));
    assert.notEqual(swept.status, 'failed', show(swept));
    // Asked again with the same key once blocks are on top, the sweep reports what it did.
    await eventually(async () => {
      await mine(confirmations - 1);
      const again = await adapter.sweep(sweepOf(transactionId, sweepKey, 'USDC'));
      assert.equal(again.status, 'confirmed', show(again));
    }, 20_000, 100);
    assert.equal(await balanceOf(noReturn.address, address), 0n);
    assert.equal(await balanceOf(noReturn.address, hotWallet.address), 9_000_000n);

    const nonce = await publicClient.getTransactionCount({ address: hotWallet.address });
    assert.deepEqual(await adapter.sweep(sweepOf(transactionId, `sweep-false-${transactionId}`, 'USDT')), {
      status: 'failed', reason: 'the sweep would revert (does the token refuse to move the balance?)', retryable: true,
    });
    assert.equal(await publicClient.getTransactionCount({ address: hotWallet.address }), nonce, 'nothing was signed');
    // Forced on chain by someone else, it reverts as a whole: no sweep is ever reported for funds that stayed.
    const salt = depositSalt(transactionId);
    assert.equal(
      await forcedWrite(partner, { address: forwarderFactory, abi: depositForwarderFactoryAbi as Abi, functionName: 'sweep', args: [salt, falseReturn.address] }),
      'reverted',
    );
    assert.equal(await balanceOf(falseReturn.address, address), 9_000_000n);
  });
});

describe('deploying the factory (npm run celo:deploy-factory)', () => {
  test('prints the factory address for CHAINS_FILE; the hot wallet is the treasury and the admin is separate', async () => {
    const key = generatePrivateKey();
    const operator = privateKeyToAccount(key);
    await testClient.setBalance({ address: operator.address, value: parseEther('1') });
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import', 'tsx', join(root, 'scripts', 'celo-deploy-factory.ts'), '--rpc-url', anvil.url, '--admin', factoryAdmin.address,
    ], { cwd: root, env: { ...process.env, CELO_SIGNER_KEY: key }, timeout: 60_000 });
    assert.ok(!stdout.includes(key.slice(2)), 'the key is never printed');
    const printed = JSON.parse(stdout.slice(0, stdout.lastIndexOf('}') + 1)) as { depositFactory: Address; treasury: Address; admin: Address };
    assert.equal(printed.treasury, operator.address);
    assert.equal(printed.admin, factoryAdmin.address);
    const adapter = new CeloAdapter(adapterOptions({ depositFactory: printed.depositFactory }));
    await adapter.checkDepositFactory();
    await assert.rejects(
      deployDepositFactory({ rpcUrl: anvil.url, chainId: 42220, hotWalletKey: key, admin: operator.address }),
      /must not be the hot wallet/,
    );
  });
});
