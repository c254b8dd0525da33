// The Solana adapter against real program execution: litesvm runs the SPL Token and Associated
// Token Account programs behind a local JSON-RPC server (test/support/litesvm-rpc.ts), the
// adapter talks to it through @solana/web3.js `Connection`, and sends are journalled in a real
// LMDB store. Each case is what a partner (a deposit they reported) or an operator (a refund that
// must go out exactly once) would notice.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Connection, Keypair, PublicKey, Transaction, TransactionInstruction } from '@solana/web3.js';
import { sendJournalOnStore } from '../../src/chains/chains.ts';
import type { SendRequest } from '../../src/chains/chains.ts';
import type { LiveChainFactory } from '../../src/chains/chain-services.ts';
import { parseChainsFile } from '../../src/chains/config.ts';
import { SolanaAdapter, solanaAdapterFromConfig } from '../../src/chains/solana.ts';
import type { SolanaAdapterOptions } from '../../src/chains/solana.ts';
import {
  associatedTokenAddress, base58Encode, createAssociatedTokenAccountIdempotentInstruction, tokenProgramId,
  transferCheckedInstruction,
} from '../../src/chains/solana-helpers.ts';
import { decimalFromString, toFixedString } from '../../src/domain/money.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { createMint, fundTokenAccount, fundedKeypair, mintToCheckedInstruction, startLiteSvmRpc, tokenBalance } from '../support/litesvm-rpc.ts';
import type { LiteSvmRpc } from '../support/litesvm-rpc.ts';
import { teardown } from '../support/teardown.ts';

const decimals = 6;
const signerEnv = 'TEST_SOLANA_HOT_WALLET';
const masterEnv = 'TEST_SOLANA_DEPOSIT_MASTER';
const masterSecret = randomBytes(32).toString('hex');

let rpc: LiteSvmRpc;
let connection: Connection;
let store: LmdbStore;
let storeDir: string;
let mintAuthority: Keypair;
let usdcMint: PublicKey;
let otherMint: PublicKey;
let deposit: Keypair;
let partner: Keypair;
let hotWallet: Keypair;
/** The adapters' clock (the injected `nowMs`): settle windows are crossed by moving it. */
let clockMs = Date.now();

function adapterOptions(overrides: Partial<SolanaAdapterOptions> = {}): SolanaAdapterOptions {
  return {
    rpcUrl: rpc.url,
    depositAddress: deposit.publicKey.toBase58(),
    assets: { USDC: { mint: usdcMint.toBase58(), decimals } },
    signerSecretEnv: signerEnv,
    env: { [signerEnv]: JSON.stringify([...hotWallet.secretKey]) },
    journal: sendJournalOnStore(store),
    rpcTimeoutMs: 5_000,
    nowMs: () => clockMs,
    ...overrides,
  };
}

/** A partner's transferChecked, broadcast through Connection like a wallet would. */
async function partnerTransfer(options: {
  mint: PublicKey; to: PublicKey; amount: bigint; skipPreflight?: boolean; createDestination?: boolean;
}): Promise<string> {
  const destination = associatedTokenAddress(options.to, options.mint);
  const instructions: TransactionInstruction[] = [];
  if (options.createDestination === true) {
    instructions.push(createAssociatedTokenAccountIdempotentInstruction(partner.publicKey, destination, options.to, options.mint));
  }
  instructions.push(transferCheckedInstruction({
    source: associatedTokenAddress(partner.publicKey, options.mint),
    mint: options.mint,
    destination,
    owner: partner.publicKey,
  }, options.amount, decimals));
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const transaction = new Transaction({ feePayer: partner.publicKey, blockhash, lastValidBlockHeight }).add(...instructions);
  transaction.sign(partner);
  return connection.sendRawTransaction(transaction.serialize(), { skipPreflight: options.skipPreflight ?? false });
}

/** Assertion messages: results carry bigint amounts. */
function show(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
}

function usdc(text: string): SendRequest['amount'] {
  return decimalFromString(text, decimals);
}

function refund(idempotencyKey: string, destination: PublicKey, amount: string): SendRequest {
  return { network: 'SOLANA', asset: 'USDC', amount: usdc(amount), destination: destination.toBase58(), idempotencyKey };
}

before(async () => {
  rpc = await startLiteSvmRpc();
  connection = new Connection(rpc.url, 'finalized');
  storeDir = mkdtempSync(join(tmpdir(), 'solana-adapter-'));
  store = new LmdbStore({ dir: storeDir });
  await store.init();
  mintAuthority = fundedKeypair(rpc);
  usdcMint = createMint(rpc, mintAuthority, decimals);
  otherMint = createMint(rpc, mintAuthority, decimals);
  deposit = Keypair.generate();
  partner = fundedKeypair(rpc);
  hotWallet = fundedKeypair(rpc);
  fundTokenAccount(rpc, mintAuthority, deposit.publicKey, usdcMint, decimals, 0n);
  fundTokenAccount(rpc, mintAuthority, partner.publicKey, usdcMint, decimals, 1_000_000_000n);
  fundTokenAccount(rpc, mintAuthority, partner.publicKey, otherMint, decimals, 1_000_000_000n);
  fundTokenAccount(rpc, mintAuthority, hotWallet.publicKey, usdcMint, decimals, 100_000_000n);
});

after(() => teardown(
  () => { delete process.env[masterEnv]; },
  () => store?.close(),
  () => { rmSync(storeDir, { recursive: true, force: true }); },
  () => rpc?.close(),
));

describe('verify: a reported Solana deposit', () => {
  test('reports the exact amount of each transferChecked into the deposit account, with the sender for refunds', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    for (const [baseUnits, text] of [[12_345_678n, '12.345678'], [12_345_677n, '12.345677'], [12_345_679n, '12.345679']] as const) {
      const signature = await partnerTransfer({ mint: usdcMint, to: deposit.publicKey, amount: baseUnits });
      const result = await adapter.verify(signature);
      assert.equal(result.status, 'found', show(result));
      assert.ok(result.status === 'found');
      assert.equal(result.transfers.length, 1);
      const [transfer] = result.transfers;
      assert.ok(transfer !== undefined);
      assert.equal(transfer.network, 'SOLANA');
      assert.equal(transfer.onChainId, signature);
      assert.equal(transfer.asset, 'USDC');
      assert.equal(toFixedString(transfer.amount), text);
      assert.equal(transfer.sender, partner.publicKey.toBase58());
      assert.equal(transfer.memo, null);
      assert.ok(transfer.observedAtMs > 0);
    }
  });

  test('a mint that is not the active one is invalid, even into the deposit wallet', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const signature = await partnerTransfer({ mint: otherMint, to: deposit.publicKey, amount: 5_000_000n, createDestination: true });
    const result = await adapter.verify(signature);
    assert.equal(result.status, 'invalid');
    assert.match(result.status === 'invalid' ? result.reason : '', /mint is not an accepted asset/);
  });

  test('USDC sent to another wallet than the deposit wallet is invalid', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const stranger = Keypair.generate().publicKey;
    const signature = await partnerTransfer({ mint: usdcMint, to: stranger, amount: 5_000_000n, createDestination: true });
    const result = await adapter.verify(signature);
    assert.equal(result.status, 'invalid');
    assert.match(result.status === 'invalid' ? result.reason : '', /another token account/);
  });

  test('an unchecked SPL transfer into the deposit account is refused with a reason that says so', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const data = Buffer.alloc(9);
    data.writeUInt8(3, 0);
    data.writeBigUInt64LE(1_000_000n, 1);
    const transfer = new TransactionInstruction({
      programId: tokenProgramId,
      keys: [
        { pubkey: associatedTokenAddress(partner.publicKey, usdcMint), isSigner: false, isWritable: true },
        { pubkey: associatedTokenAddress(deposit.publicKey, usdcMint), isSigner: false, isWritable: true },
        { pubkey: partner.publicKey, isSigner: true, isWritable: false },
      ],
      data,
    });
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    const transaction = new Transaction({ feePayer: partner.publicKey, blockhash, lastValidBlockHeight }).add(transfer);
    transaction.sign(partner);
    const signature = await connection.sendRawTransaction(transaction.serialize());
    const result = await adapter.verify(signature);
    assert.equal(result.status, 'invalid');
    assert.match(result.status === 'invalid' ? result.reason : '', /only SPL Token transferChecked/);
  });

  test('a transaction that failed on chain is invalid', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    // More than the partner holds: the token program fails it; without preflight it still lands.
    const signature = await partnerTransfer({ mint: usdcMint, to: deposit.publicKey, amount: 999_000_000_000n, skipPreflight: true });
    const { value } = await connection.getSignatureStatuses([signature]);
    assert.notEqual(value[0]?.err ?? null, null, 'the failed transaction landed');
    const result = await adapter.verify(signature);
    assert.deepEqual(result, { status: 'invalid', reason: 'the transaction failed on chain' });
  });

  test('an unknown signature is not found; text that is not a signature is invalid', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const unknown = base58Encode(randomBytes(64));
    assert.deepEqual(await adapter.verify(unknown), { status: 'not_found', reason: 'transaction not found' });
    assert.equal((await adapter.verify('not-a-signature')).status, 'invalid');
    assert.equal((await adapter.verify(base58Encode(randomBytes(32)))).status, 'invalid');
  });

  test('after a rotation, a deposit to the previous deposit wallet still verifies', async () => {
    const rotated = Keypair.generate().publicKey;
    const adapter = new SolanaAdapter(adapterOptions({ depositAddress: rotated.toBase58(), previousDepositAddresses: [deposit.publicKey.toBase58()] }));
    const signature = await partnerTransfer({ mint: usdcMint, to: deposit.publicKey, amount: 2_000_000n });
    const result = await adapter.verify(signature);
    assert.equal(result.status, 'found', show(result));
    assert.equal(adapter.depositTokenAccount('USDC')?.toBase58(), associatedTokenAddress(rotated, usdcMint).toBase58());
  });

  test('the adapter built from a CHAINS_FILE section verifies the same way', async () => {
    const parsed = parseChainsFile({
      SOLANA: {
        network: 'testnet',
        rpcUrl: rpc.url,
        depositAddress: deposit.publicKey.toBase58(),
        commitment: 'finalized',
        assets: { USDC: { mint: usdcMint.toBase58(), decimals } },
        signerSecretEnv: signerEnv,
        depositMasterSecretEnv: masterEnv,
      },
    });
    assert.ok(parsed.ok && parsed.file.SOLANA !== undefined, JSON.stringify(parsed));
    // Exactly as the composition root wires it (src/chains/live-chains.ts), with the variables the
    // file names in the process environment.
    const factory: LiveChainFactory = (setup, ctx) => {
      if (setup.network !== 'SOLANA') throw new Error(`SOLANA factory given ${setup.network}`);
      return { adapter: solanaAdapterFromConfig(setup.config, { journal: sendJournalOnStore(ctx.store), nowMs: () => ctx.clock.nowMs() }) };
    };
    process.env[masterEnv] = masterSecret;
    const context = { store, clock: { nowMs: () => Date.now() } } as unknown as ServiceContext;
    const { adapter } = factory({
      mode: 'live', network: 'SOLANA', config: parsed.file.SOLANA, depositAddress: deposit.publicKey.toBase58(),
      chainId: 'solana:mainnet', publicRpcUrl: null, assets: {},
    }, context);
    const signature = await partnerTransfer({ mint: usdcMint, to: deposit.publicKey, amount: 3_000_000n });
    const result = await adapter.verify(signature);
    assert.ok(result.status === 'found', show(result));
    assert.equal(toFixedString(result.transfers[0]?.amount ?? usdc('0')), '3.000000');
  });

  test('a deposit that is not finalized yet is not found until it is', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    rpc.setFinality('manual');
    try {
      const signature = await partnerTransfer({ mint: usdcMint, to: deposit.publicKey, amount: 7_000_000n });
      const early = await adapter.verify(signature);
      assert.deepEqual(early, { status: 'not_found', reason: 'not yet finalized (processed)' });
      rpc.finalize();
      const later = await adapter.verify(signature);
      assert.equal(later.status, 'found');
    } finally {
      rpc.setFinality('immediate');
      rpc.finalize();
    }
  });
});

describe('send: USDC from the hot wallet, once per idempotency key', () => {
  test('two calls with the same key make one transfer; the destination token account is created for it', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    const destinationAccount = associatedTokenAddress(destination, usdcMint);
    assert.equal(tokenBalance(rpc, destinationAccount), null);
    const first = await adapter.send(refund('refund-once', destination, '5.5'));
    assert.equal(first.status, 'confirmed', show(first));
    const second = await adapter.send(refund('refund-once', destination, '5.5'));
    assert.deepEqual(second, first);
    // A restarted process (new adapter, same store) answers the same.
    const restarted = await new SolanaAdapter(adapterOptions()).send(refund('refund-once', destination, '5.5'));
    assert.deepEqual(restarted, first);
    assert.equal(tokenBalance(rpc, destinationAccount), 5_500_000n);
    assert.ok(first.status === 'confirmed');
    assert.equal(rpc.landedSignatures().filter((signature) => signature === first.onChainId).length, 1);
  });

  test('concurrent calls with the same key make one transfer', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    const results = await Promise.all([1, 2, 3].map(async () => adapter.send(refund('refund-race', destination, '1.25'))));
    const ids = new Set(results.map((result) => (result.status === 'failed' ? result.reason : result.onChainId)));
    assert.equal(ids.size, 1, show(results));
    assert.equal(tokenBalance(rpc, associatedTokenAddress(destination, usdcMint)), 1_250_000n);
  });

  test('the same key with another amount or destination is refused, not sent', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    assert.equal((await adapter.send(refund('refund-content', destination, '2'))).status, 'confirmed');
    const changed = await adapter.send(refund('refund-content', destination, '3'));
    assert.deepEqual(changed, { status: 'failed', reason: 'idempotency key already used with a different asset, amount or destination', retryable: false });
    assert.equal(tokenBalance(rpc, associatedTokenAddress(destination, usdcMint)), 2_000_000n);
  });

  test('a transaction the leader dropped is rebroadcast as the same bytes, and lands once', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    rpc.dropIncoming(true);
    let first;
    try {
      first = await adapter.send(refund('refund-dropped', destination, '4'));
    } finally {
      rpc.dropIncoming(false);
    }
    assert.equal(first.status, 'pending');
    assert.equal(tokenBalance(rpc, associatedTokenAddress(destination, usdcMint)), null);
    const retry = await adapter.send(refund('refund-dropped', destination, '4'));
    assert.ok(first.status === 'pending');
    assert.deepEqual(retry, { status: 'confirmed', onChainId: first.onChainId });
    assert.equal(tokenBalance(rpc, associatedTokenAddress(destination, usdcMint)), 4_000_000n);
  });

  test('after its blockhash expired unseen, a new transaction is built, and only it lands', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    rpc.dropIncoming(true);
    let first;
    try {
      first = await adapter.send(refund('refund-expired', destination, '3.000001'));
      assert.equal(first.status, 'pending');
      // Still valid: a retry rebroadcasts the same signature rather than building another.
      assert.deepEqual(await adapter.send(refund('refund-expired', destination, '3.000001')), first);
      rpc.expireBlockhash();
    } finally {
      rpc.dropIncoming(false);
    }
    // Not rebuilt at once: a lagging lookup node could still be hiding it (next test).
    assert.deepEqual(await adapter.send(refund('refund-expired', destination, '3.000001')), first);
    clockMs += 31_000;
    const rebuilt = await adapter.send(refund('refund-expired', destination, '3.000001'));
    assert.equal(rebuilt.status, 'confirmed', show(rebuilt));
    assert.ok(rebuilt.status === 'confirmed' && first.status === 'pending');
    assert.notEqual(rebuilt.onChainId, first.onChainId);
    assert.ok(!rpc.landedSignatures().includes(first.onChainId));
    assert.deepEqual(await adapter.send(refund('refund-expired', destination, '3.000001')), rebuilt);
    assert.equal(tokenBalance(rpc, associatedTokenAddress(destination, usdcMint)), 3_000_001n);
  });

  test('a transfer that landed but that a lagging lookup node does not show yet is not sent a second time', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    const request = refund('refund-lagging', destination, '2.5');
    const destinationAccount = associatedTokenAddress(destination, usdcMint);
    rpc.setStatusLag(1_000);
    let first;
    try {
      first = await adapter.send(request);
      assert.equal(first.status, 'pending', 'landed, but the lookup node has not seen it');
      assert.equal(tokenBalance(rpc, destinationAccount), 2_500_000n);
      // The block height moves past the attempt's lastValidBlockHeight; the lookups still miss it.
      rpc.expireBlockhash();
      assert.deepEqual(await adapter.send(request), first, 'expired and unfound: not rebuilt at once');
      clockMs += 10_000;
      // Another process (a restarted refund worker) counts from the same journaled first sighting.
      assert.deepEqual(await new SolanaAdapter(adapterOptions()).send(request), first, 'still within the settling window');
    } finally {
      rpc.setStatusLag(0); // the lookup node catches up
    }
    assert.ok(first.status === 'pending');
    assert.deepEqual(await adapter.send(request), { status: 'confirmed', onChainId: first.onChainId });
    clockMs += 60_000;
    assert.deepEqual(await adapter.send(request), { status: 'confirmed', onChainId: first.onChainId });
    assert.equal(tokenBalance(rpc, destinationAccount), 2_500_000n, 'one refund, not two');
    assert.equal(await store.get('chain_sends', `SOLANA:${request.idempotencyKey}:1`), null, 'no second transaction was ever signed');
  });

  test('a send is pending until it is finalized', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    rpc.setFinality('manual');
    try {
      const first = await adapter.send(refund('refund-finality', destination, '1'));
      assert.equal(first.status, 'pending');
      rpc.finalize();
      assert.ok(first.status === 'pending');
      assert.deepEqual(await adapter.send(refund('refund-finality', destination, '1')), { status: 'confirmed', onChainId: first.onChainId });
    } finally {
      rpc.setFinality('immediate');
      rpc.finalize();
    }
  });

  test('a transfer that failed on chain is reported once, and a retry with the same key sends anew', async () => {
    const poorWallet = fundedKeypair(rpc);
    fundTokenAccount(rpc, mintAuthority, poorWallet.publicKey, usdcMint, decimals, 1_000_000n);
    const adapter = new SolanaAdapter(adapterOptions({ env: { [signerEnv]: JSON.stringify([...poorWallet.secretKey]) } }));
    const destination = Keypair.generate().publicKey;
    const request = refund('refund-poor', destination, '2');
    const first = await adapter.send(request);
    assert.equal(first.status, 'pending', 'the failing transaction landed; its outcome is read next time');
    const reported = await adapter.send(request);
    assert.equal(reported.status, 'failed');
    assert.ok(reported.status === 'failed' && reported.retryable);
    // The operator tops the hot wallet up; the retry builds a new transaction that succeeds.
    const topUp = new Transaction({ feePayer: mintAuthority.publicKey, recentBlockhash: rpc.svm.latestBlockhash() }).add(
      mintToCheckedInstruction(usdcMint, associatedTokenAddress(poorWallet.publicKey, usdcMint), mintAuthority.publicKey, 5_000_000n, decimals),
    );
    topUp.sign(mintAuthority);
    rpc.submit(topUp);
    const retried = await adapter.send(request);
    assert.equal(retried.status, 'confirmed', show(retried));
    assert.ok(retried.status === 'confirmed' && first.status === 'pending');
    assert.notEqual(retried.onChainId, first.onChainId);
    assert.equal(tokenBalance(rpc, associatedTokenAddress(destination, usdcMint)), 2_000_000n);
  });

  test('requests the adapter cannot honour are refused before anything is signed', async () => {
    const adapter = new SolanaAdapter(adapterOptions());
    const destination = Keypair.generate().publicKey;
    const tooPrecise = { ...refund('refund-precise', destination, '1'), amount: decimalFromString('1.0000001', 7) };
    assert.deepEqual(await adapter.send(tooPrecise), { status: 'failed', reason: 'amount has more than 6 decimals', retryable: false });
    assert.equal((await adapter.send({ ...refund('refund-bad-address', destination, '1'), destination: '0xabc' })).status, 'failed');
    assert.equal((await adapter.send({ ...refund('refund-usdt', destination, '1'), asset: 'USDT' })).status, 'failed');
    const keyless = new SolanaAdapter(adapterOptions({ env: {} }));
    assert.deepEqual(await keyless.send(refund('refund-keyless', destination, '1')), {
      status: 'failed', reason: 'the SOLANA hot wallet key is not configured', retryable: false,
    });
    assert.throws(() => new SolanaAdapter(adapterOptions({ env: { [signerEnv]: 'not a key' } })), (error: Error) => {
      assert.match(error.message, new RegExp(signerEnv));
      assert.doesNotMatch(error.message, /not a key/);
      return true;
    });
  });
});

describe('per-transaction deposit addresses', () => {
  /** An adapter that derives per-transaction deposit wallets from `masterSecret`. */
  function perTransaction(overrides: Partial<SolanaAdapterOptions> = {}): SolanaAdapter {
    return new SolanaAdapter(adapterOptions({
      depositMasterSecretEnv: masterEnv,
      env: { [signerEnv]: JSON.stringify([...hotWallet.secretKey]), [masterEnv]: masterSecret },
      ...overrides,
    }));
  }

  function publicKeyFrom(address: string): PublicKey {
    return new PublicKey(address);
  }

  /** Lamports of an account (0 when it does not exist). */
  async function lamports(account: PublicKey): Promise<number> {
    return connection.getBalance(account, 'finalized');
  }

  test('the address is derived from the master secret and the transaction id: stable, distinct, not the shared one', () => {
    const id = randomUUID();
    const address = perTransaction().addressFor(id);
    assert.equal(perTransaction().addressFor(id), address, 'the same in every process');
    assert.notEqual(perTransaction().addressFor(randomUUID()), address, 'one per transaction');
    assert.notEqual(perTransaction({ env: { [masterEnv]: randomBytes(32).toString('hex') } }).addressFor(id), address, 'another master secret, other addresses');
    assert.notEqual(address, deposit.publicKey.toBase58());
    assert.throws(() => new SolanaAdapter(adapterOptions()).addressFor(id), /depositMasterSecretEnv/);
  });

  test('a missing or malformed master secret stops the adapter, naming the variable and never the value', () => {
    assert.throws(() => perTransaction({ env: {} }), (error: Error) => error.message.includes(masterEnv) && error.message.includes('not set'));
    const pasted = `not-hex-${randomBytes(8).toString('hex')}`;
    for (const value of [pasted, randomBytes(16).toString('hex')]) {
      assert.throws(() => perTransaction({ env: { [masterEnv]: value } }), (error: Error) => {
        assert.match(error.message, new RegExp(masterEnv));
        assert.ok(!error.message.includes(value), 'the value is not in the message');
        return true;
      });
    }
  });

  test('verifyInto counts a transfer into the transaction\'s own token account and refuses one into another; transfersInto lists it', async () => {
    const adapter = perTransaction();
    const mine = adapter.addressFor(randomUUID());
    const theirs = adapter.addressFor(randomUUID());
    const signature = await partnerTransfer({ mint: usdcMint, to: publicKeyFrom(mine), amount: 12_947_059n, createDestination: true });
    const found = await adapter.verifyInto(signature, mine);
    assert.ok(found.status === 'found', show(found));
    assert.equal(found.transfers.length, 1);
    assert.equal(toFixedString(found.transfers[0]?.amount ?? usdc('0')), '12.947059');
    assert.equal(found.transfers[0]?.sender, partner.publicKey.toBase58());
    assert.deepEqual(await adapter.verifyInto(signature, theirs), { status: 'invalid', reason: "the transfer goes to another token account than this transaction's deposit account" });
    assert.equal((await adapter.verify(signature)).status, 'invalid', 'not a deposit to the shared address either');
    assert.deepEqual(await adapter.transfersInto(mine, 10), [signature]);
    assert.deepEqual(await adapter.transfersInto(theirs, 10), []);
  });

  test('sweep: the balance goes to the hot wallet, the token account is closed and its rent lands in the hot wallet; once per key', async () => {
    const adapter = perTransaction();
    const id = randomUUID();
    const owner = publicKeyFrom(adapter.addressFor(id));
    const account = associatedTokenAddress(owner, usdcMint);
    const hotAccount = associatedTokenAddress(hotWallet.publicKey, usdcMint);
    await partnerTransfer({ mint: usdcMint, to: owner, amount: 3_500_000n, createDestination: true });
    const rent = await lamports(account);
    assert.ok(rent > 0, 'the token account holds its rent');
    const hotTokensBefore = tokenBalance(rpc, hotAccount) ?? 0n;
    const hotLamportsBefore = await lamports(hotWallet.publicKey);

    const swept = await adapter.sweep({ transactionId: id, asset: 'USDC', idempotencyKey: `sweep:${id}` });
    assert.equal(swept.status, 'confirmed', show(swept));
    assert.ok(swept.status === 'confirmed');
    assert.equal(tokenBalance(rpc, account), null, 'the token account is closed');
    assert.equal(tokenBalance(rpc, hotAccount), hotTokensBefore + 3_500_000n, 'the whole balance reached the hot wallet');
    const fee = 2 * 5_000; // two signatures: the hot wallet (fee payer) and the deposit wallet
    assert.equal(await lamports(hotWallet.publicKey), hotLamportsBefore + rent - fee, 'the rent came back to the hot wallet, which paid the fee');

    // The same key again (a retry, another worker, a restart): the recorded sweep, nothing moves.
    const again = await perTransaction().sweep({ transactionId: id, asset: 'USDC', idempotencyKey: `sweep:${id}` });
    assert.deepEqual(again, swept);
    assert.equal(tokenBalance(rpc, hotAccount), hotTokensBefore + 3_500_000n);
    assert.equal(rpc.landedSignatures().filter((signature) => signature === swept.onChainId).length, 1);
    // Another key for the same (now closed) account: nothing to sweep, nothing signed.
    const landed = rpc.landedSignatures().length;
    assert.deepEqual(await adapter.sweep({ transactionId: id, asset: 'USDC', idempotencyKey: `sweep:${id}:again` }), { status: 'nothing_to_sweep' });
    assert.equal(rpc.landedSignatures().length, landed);
    // The sweep is listed at the address, and it is not a deposit into it.
    const listed = await adapter.transfersInto(owner.toBase58(), 10);
    assert.ok(listed.includes(swept.onChainId));
    assert.equal((await adapter.verifyInto(swept.onChainId, owner.toBase58())).status, 'invalid');
  });
});
