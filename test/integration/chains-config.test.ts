// The chains file (CHAINS_FILE) as an operator writes it, the deposit setups it resolves to, and
// the payment_context a partner funds from — exactly the spec's table, per network.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  base58Encode,
  isEvmAddress,
  isSolanaAddress,
  isStellarAccount,
  loadChainsFile,
  parseChainsFile,
  resolveChainSetups,
  stellarAccountFromPublicKey,
  type ChainsFile,
} from '../../src/chains/config.ts';
import { createChainAvailability, paymentContextFor, type PerTransactionPorts } from '../../src/chains/payment-context.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import type { Network } from '../../src/domain/assets.ts';
import { priceQuoteRequest, quoteToJson } from '../../src/domain/pricing.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { transactionReference } from '../../src/domain/reference.ts';

const corridors = loadDefaultCorridors();
const stellarDeposit = stellarAccountFromPublicKey(randomBytes(32));
const solanaDeposit = base58Encode(Uint8Array.from([7, ...randomBytes(31)]));

/** The chains file example of docs/money-movement.md, with real-looking values. */
function designExample(): Record<string, unknown> {
  return {
    STELLAR: {
      network: 'mainnet',
      horizonUrl: 'https://horizon.example',
      depositAddress: stellarDeposit,
      assets: { USDC: { issuer: 'GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN', decimals: 7 } },
      signerSecretEnv: 'STELLAR_SIGNER_SECRET',
    },
    SOLANA: {
      network: 'mainnet',
      rpcUrl: 'https://solana-rpc.example',
      publicRpcUrl: 'https://api.mainnet-beta.solana.com',
      depositAddress: solanaDeposit,
      commitment: 'finalized',
      assets: { USDC: { mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6 } },
      signerSecretEnv: 'SOLANA_SIGNER_SECRET',
      depositMasterSecretEnv: 'SOLANA_DEPOSIT_MASTER_SECRET',
    },
    CELO: {
      network: 'mainnet',
      rpcUrl: 'https://celo-rpc.example',
      publicRpcUrl: 'https://forno.celo.org',
      chainId: 42220,
      depositAddress: '0x1111111111111111111111111111111111111111',
      depositFactory: '0x2222222222222222222222222222222222222222',
      confirmations: 3,
      assets: {
        USDC: { contract: '0xcebA9300f2b948710d2653dD7B07f33A8B32118C', decimals: 6 },
        USDT: { contract: '0x48065fbBE25f71C9282ddf5e1cD6D6A887483D5e', decimals: 6 },
      },
      signerSecretEnv: 'CELO_SIGNER_KEY',
    },
  };
}

function errorsOf(json: unknown): string[] {
  const result = parseChainsFile(json);
  assert.equal(result.ok, false, 'the file is refused');
  return result.ok ? [] : result.errors;
}

function quote(network: Network, asset: 'USDC' | 'USDT' = 'USDC'): Quote {
  const priced = priceQuoteRequest(
    corridors,
    { kind: 'payout', amount: 10, cryptoCurrency: asset, network, paymentMethod: 'PIX', targetCurrency: 'BRL' },
    { rates: corridors.rates, quoteId: randomUUID(), partnerId: 'demo', nowMs: Date.now() },
  );
  assert.ok(priced.ok);
  return priced.quote;
}

describe('chains file', () => {
  test("DESIGN's example is accepted", () => {
    const result = parseChainsFile(designExample());
    assert.ok(result.ok, JSON.stringify(result));
  });

  test('rotated-out deposit addresses may be listed (still watched), each validated', () => {
    const file = designExample();
    (file.CELO as Record<string, unknown>).previousDepositAddresses = ['0x3333333333333333333333333333333333333333'];
    assert.ok(parseChainsFile(file).ok, 'a valid previous address is accepted');
    (file.CELO as Record<string, unknown>).previousDepositAddresses = ['0x33'];
    assert.ok(errorsOf(file).some((line) => line.startsWith('CELO.previousDepositAddresses.0:')));
  });

  test('CELO names its deposit forwarder factory (per-transaction addresses); the scan window is bounded', () => {
    const file = designExample();
    const celo = file.CELO as Record<string, unknown>;
    delete celo.depositFactory;
    assert.ok(errorsOf(file).some((line) => line.startsWith('CELO.depositFactory:')), 'a live Celo without a factory is refused');
    for (const bad of ['0x22', '0x0000000000000000000000000000000000000000', 42]) {
      celo.depositFactory = bad;
      assert.ok(errorsOf(file).some((line) => line.startsWith('CELO.depositFactory:')), JSON.stringify(bad));
    }
    celo.depositFactory = '0x2222222222222222222222222222222222222222';
    celo.depositScanBlocks = 50_000;
    assert.ok(parseChainsFile(file).ok);
    for (const bad of [0, 1.5, 2_000_000]) {
      celo.depositScanBlocks = bad;
      assert.ok(errorsOf(file).some((line) => line.startsWith('CELO.depositScanBlocks:')), JSON.stringify(bad));
    }
  });

  test('Solana names the variable of its deposit master secret: required, and never the secret itself', () => {
    const missing = designExample();
    delete (missing.SOLANA as Record<string, unknown>).depositMasterSecretEnv;
    assert.ok(errorsOf(missing).some((line) => line.startsWith('SOLANA.depositMasterSecretEnv:')), 'without it every transaction would share one address');
    const pasted = designExample();
    const secret = 'ab'.repeat(32);
    (pasted.SOLANA as Record<string, unknown>).depositMasterSecretEnv = secret;
    const errors = errorsOf(pasted);
    assert.ok(errors.some((line) => line.startsWith('SOLANA.depositMasterSecretEnv:')), errors.join('\n'));
    assert.ok(!errors.join('\n').includes(secret), 'the value is not in the message');
  });

  test('unknown fields are refused, naming where they are', () => {
    const file = designExample();
    (file.SOLANA as Record<string, unknown>).privateKey = 'x';
    const errors = errorsOf({ ...file, POLYGON: {} });
    assert.ok(errors.some((line) => line.includes('SOLANA') && line.includes('privateKey')), errors.join('\n'));
    assert.ok(errors.some((line) => line.includes('POLYGON')), errors.join('\n'));
  });

  test('a secret pasted where the variable name goes is refused, and never echoed', () => {
    const seed = `S${'A'.repeat(55)}`;
    const file = designExample();
    (file.STELLAR as Record<string, unknown>).signerSecretEnv = seed;
    (file.CELO as Record<string, unknown>).signerSecretEnv = `0x${'ab'.repeat(32)}`;
    const errors = errorsOf(file);
    assert.ok(errors.some((line) => line.startsWith('STELLAR.signerSecretEnv:')), errors.join('\n'));
    assert.ok(errors.some((line) => line.startsWith('CELO.signerSecretEnv:')), errors.join('\n'));
    assert.ok(!errors.join('\n').includes(seed) && !errors.join('\n').includes('abab'), 'the value is not in the message');
  });

  test('each bad field is named: decimals, addresses, URLs, commitment, empty assets', () => {
    const file = designExample();
    const stellar = file.STELLAR as { assets: { USDC: { decimals: number } }; depositAddress: string };
    stellar.assets.USDC.decimals = 6;
    stellar.depositAddress = `G${'A'.repeat(55)}`; // the right shape, a wrong checksum
    const solana = file.SOLANA as Record<string, unknown>;
    solana.rpcUrl = 'ftp://solana';
    solana.commitment = 'processed';
    (file.CELO as Record<string, unknown>).assets = {};
    const errors = errorsOf(file).map((line) => line.split(':')[0]);
    for (const field of ['STELLAR.assets.USDC.decimals', 'STELLAR.depositAddress', 'SOLANA.rpcUrl', 'SOLANA.commitment', 'CELO.assets']) {
      assert.ok(errors.includes(field), `${field} in ${errors.join(', ')}`);
    }
  });

  test('loadChainsFile names the file; unreadable JSON stops start-up', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chains-file-'));
    try {
      const path = join(dir, 'chains.json');
      writeFileSync(path, '{ not json');
      assert.throws(() => loadChainsFile(path), (error: Error) => error.message.startsWith(`${path}: cannot read chains file`));
      writeFileSync(path, JSON.stringify({ CELO: { rpcUrl: 'https://x.example' } }));
      assert.throws(() => loadChainsFile(path), (error: Error) => error.message.includes(`${path}: CELO.depositAddress`));
      writeFileSync(path, JSON.stringify(designExample()));
      assert.equal(loadChainsFile(path).CELO?.confirmations, 3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deposit setups', () => {
  test('sandbox mode without a file: every network on the sandbox chain, with the corridor mints', () => {
    const setups = resolveChainSetups(null, { sandbox: true, corridors });
    assert.equal(setups.STELLAR?.mode, 'sandbox');
    assert.ok(isStellarAccount(setups.STELLAR?.depositAddress ?? ''));
    assert.ok(isSolanaAddress(setups.SOLANA?.depositAddress ?? ''));
    assert.ok(isEvmAddress(setups.CELO?.depositAddress ?? ''));
    assert.deepEqual(setups.CELO?.assets.USDT, { identifier: '0x48065fbBE25f71C9282ddf5e1cD6D6A887483D5e', decimals: 6 });
    assert.equal(setups.STELLAR?.assets.USDC?.decimals, 7);
    // The same addresses in every process (so a deposit address never differs between roles).
    assert.equal(resolveChainSetups(null, { sandbox: true, corridors }).SOLANA?.depositAddress, setups.SOLANA?.depositAddress);
  });

  test('production mode offers only the networks of the file; a file network is live', () => {
    const file = parseChainsFile({ CELO: { ...(designExample().CELO as object), chainId: 44787 } });
    assert.ok(file.ok);
    const setups = resolveChainSetups(file.file, { sandbox: false, corridors });
    assert.deepEqual(Object.keys(setups), ['CELO']);
    assert.equal(setups.CELO?.mode, 'live');
    assert.equal(setups.CELO?.chainId, 'eip155:44787');
    const availability = createChainAvailability(() => setups);
    assert.equal(availability.active('CELO', 'USDT'), true);
    assert.equal(availability.active('STELLAR', 'USDC'), false);
    // Sandbox mode fills in the rest.
    const mixed = resolveChainSetups(file.file, { sandbox: true, corridors });
    assert.deepEqual([mixed.STELLAR?.mode, mixed.SOLANA?.mode, mixed.CELO?.mode], ['sandbox', 'sandbox', 'live']);
  });

  test('a token that disagrees with the corridor mint stops start-up', () => {
    const example = designExample();
    (example.SOLANA as { assets: { USDC: { decimals: number } } }).assets.USDC.decimals = 9;
    const file = parseChainsFile(example);
    assert.ok(file.ok);
    assert.throws(() => resolveChainSetups(file.file as ChainsFile, { sandbox: false, corridors }), /SOLANA\.assets\.USDC\.decimals: 9 differs/);
  });
});

describe('payment_context', () => {
  const specFields = ['amount', 'blockchain', 'chainFamily', 'chainId', 'cryptoCurrency', 'decimals', 'depositAddress', 'memo', 'memoType', 'mintAddress', 'notify', 'rpcUrl'];
  const file = parseChainsFile(designExample());
  assert.ok(file.ok);
  const live = resolveChainSetups(file.file, { sandbox: false, corridors });
  const sandbox = resolveChainSetups(null, { sandbox: true, corridors });

  test('Stellar: the memo is the transaction reference; no mint, no notify', () => {
    const id = randomUUID();
    const stellarQuote = quote('STELLAR');
    const context = paymentContextFor(live, stellarQuote, id);
    assert.deepEqual(Object.keys(context).sort(), specFields);
    assert.deepEqual(context, {
      amount: quoteToJson(stellarQuote).value,
      blockchain: 'STELLAR',
      chainFamily: 'stellar',
      chainId: 'stellar:pubnet',
      cryptoCurrency: 'USDC',
      decimals: 7,
      depositAddress: stellarDeposit,
      memo: transactionReference(id),
      memoType: 'text',
      mintAddress: null,
      notify: { endpoint: null, required: false },
      rpcUrl: null,
    });
  });

  test('Solana and Celo: the mint, notify required, the public RPC URL', () => {
    const solana = paymentContextFor(live, quote('SOLANA'), randomUUID());
    assert.deepEqual(
      [solana.chainFamily, solana.chainId, solana.depositAddress, solana.mintAddress, solana.memo, solana.memoType, solana.decimals, solana.rpcUrl],
      ['solana', 'solana:mainnet', solanaDeposit, 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', null, null, 6, 'https://api.mainnet-beta.solana.com'],
    );
    assert.deepEqual(solana.notify, { endpoint: '/payments/notify', required: true });
    const celoQuote = quote('CELO', 'USDT');
    const celo = paymentContextFor(live, celoQuote, randomUUID());
    assert.deepEqual(
      [celo.amount, celo.chainFamily, celo.chainId, celo.cryptoCurrency, celo.mintAddress, celo.rpcUrl],
      [quoteToJson(celoQuote).value, 'evm', 'eip155:42220', 'USDT', '0x48065fbBE25f71C9282ddf5e1cD6D6A887483D5e', 'https://forno.celo.org'],
    );
  });

  test('Solana and Celo with per-transaction addresses: depositAddress is the transaction\'s own; nothing else changes', () => {
    const id = randomUUID();
    const ports = new Map([['SOLANA', { network: 'SOLANA', addressFor: (transactionId: string) => `own-${transactionId}` }]]) as unknown as PerTransactionPorts;
    const shared = paymentContextFor(live, quote('SOLANA'), id);
    const own = paymentContextFor(live, quote('SOLANA'), id, ports);
    assert.equal(own.depositAddress, `own-${id}`);
    assert.deepEqual({ ...own, depositAddress: shared.depositAddress, amount: shared.amount }, shared, 'every other field as before');
    assert.deepEqual(Object.keys(own).sort(), specFields);
  });

  test('sandbox: synthetic deposit addresses, no RPC URL; a rotated address applies to new transactions', () => {
    const context = paymentContextFor(sandbox, quote('CELO'), randomUUID());
    assert.equal(context.depositAddress, sandbox.CELO?.depositAddress);
    assert.equal(context.rpcUrl, null);
    const rotated = designExample();
    (rotated.CELO as Record<string, unknown>).depositAddress = '0x2222222222222222222222222222222222222222';
    const next = parseChainsFile(rotated);
    assert.ok(next.ok);
    const after = paymentContextFor(resolveChainSetups(next.file, { sandbox: false, corridors }), quote('CELO'), randomUUID());
    assert.equal(after.depositAddress, '0x2222222222222222222222222222222222222222');
  });
});
