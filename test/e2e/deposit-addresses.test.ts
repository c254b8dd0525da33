// Per-transaction deposit addresses on Solana and Celo, over real HTTP against the whole service
// (ROLE=all, sandbox chain and rail). With one shared deposit address, nothing tied a transfer to
// the transaction a partner named in POST /payments/notify: partner B could watch the chain, quote
// the exact amount partner A had just sent, and notify A's transfer for B's own transaction — B's
// recipient was paid with A's money, and A's transaction expired unfunded. Each transaction now
// has its own address, and a transfer funds a transaction only if it reached that address.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { associatedTokenAddress, createAssociatedTokenAccountIdempotentInstruction, transferCheckedInstruction } from '../../src/chains/solana-helpers.ts';
import { defaultCorridorsPath } from '../../src/config/corridors.ts';
import { createMint, fundTokenAccount, fundedKeypair, startLiteSvmRpc, tokenBalance, type LiteSvmRpc } from '../support/litesvm-rpc.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody, untilStatus, type CallOptions } from './support.ts';
import { teardown } from '../support/teardown.ts';

const brebMobile = '3001234567';

describe('per-transaction deposit addresses (sandbox chain, over HTTP)', () => {
  let h: ServiceHarness;
  let keyA: string;
  let keyB: string;
  const api = (method: string, path: string, options: CallOptions = {}) => call(h.baseUrl, method, path, options);

  before(async () => {
    h = await startServiceHarness();
    keyA = h.apiKeys[testPartners.kycOff] ?? '';
    keyB = h.apiKeys[testPartners.kycOn] ?? '';
  });
  after(async () => {
    await h.stop();
  });

  async function accepted(key: string, quotePath: string, body: Record<string, unknown>, userId: string): Promise<{ id: string; context: Record<string, unknown> }> {
    const quoted = await api('POST', quotePath, { key, body });
    assert.equal(quoted.status, 200, quoted.text);
    const response = await api('POST', '/transaction', { key, body: { quote_id: quoted.json['quote_id'], user_id: userId, account_number: brebMobile } });
    assert.equal(response.status, 200, response.text);
    return { id: response.json['id'] as string, context: response.json['payment_context'] as Record<string, unknown> };
  }

  for (const network of ['SOLANA', 'CELO'] as const) {
    test(`${network}: another partner cannot claim a transfer by notifying it for its own transaction of the same amount`, async () => {
      // Partner A's transaction, funded at the address its payment_context gave.
      const a = await accepted(keyA, '/quote', { ...payoutQuoteBody, network }, `victim-${network}`);
      const deposit = await api('POST', '/sandbox/deposits', { key: keyA, body: { transaction_id: a.id } });
      assert.equal(deposit.status, 200, deposit.text);
      assert.equal(deposit.json['deposit_address'], a.context['depositAddress'], 'funded at A\'s own address');
      const transfer = deposit.json['on_chain_tx'] as string;

      // Partner B saw the transfer on chain and quotes exactly its amount.
      const b = await accepted(keyB, '/quote/reverse', {
        source_amount: a.context['amount'], crypto_currency: 'USDC', network, payment_method: 'BREB', target_currency: 'COP',
      }, `thief-${network}`);
      assert.equal(b.context['amount'], a.context['amount'], 'the same amount to send');
      assert.notEqual(b.context['depositAddress'], a.context['depositAddress'], 'each transaction has its own address');

      const stolen = await api('POST', '/payments/notify', { key: keyB, body: { blockchain: network, on_chain_tx: transfer, transaction_id: b.id } });
      assert.equal(stolen.status, 400, stolen.text);
      assert.equal(stolen.json['code'], 'invalid_request');
      assert.match(stolen.json['reason'] as string, /deposit address/);

      const own = await api('POST', '/payments/notify', { key: keyA, body: { blockchain: network, on_chain_tx: transfer, transaction_id: a.id } });
      assert.equal(own.status, 202, own.text);
      const done = await untilStatus(h.baseUrl, keyA, a.id, 'PAYMENT_COMPLETED');
      assert.equal(done['on_chain_tx_hash'], transfer);

      const untouched = await api('GET', `/transaction/${b.id}`, { key: keyB });
      assert.equal(untouched.json['status'], 'AWAITING_PAYMENT', 'B is not paid');
      assert.equal(untouched.json['on_chain_tx_hash'], null);
    });
  }
});

describe('per-transaction deposit addresses (Solana on litesvm, over HTTP)', () => {
  // Solana is live: a local JSON-RPC server over litesvm with a USDC-like mint (the corridor's mint
  // is replaced by it); the other networks stay on the sandbox chain.
  const decimals = 6;
  const hotWalletEnv = 'E2E_SOLANA_HOT_WALLET';
  const masterEnv = 'E2E_SOLANA_DEPOSIT_MASTER';
  let rpc: LiteSvmRpc;
  let connection: Connection;
  let dir: string;
  let h: ServiceHarness;
  let mint: PublicKey;
  let payer: Keypair;
  let hotWallet: Keypair;
  let keyA: string;
  let keyB: string;
  const api = (method: string, path: string, options: CallOptions = {}) => call(h.baseUrl, method, path, options);

  before(async () => {
    rpc = await startLiteSvmRpc();
    connection = new Connection(rpc.url, 'finalized');
    const authority = fundedKeypair(rpc);
    mint = createMint(rpc, authority, decimals);
    payer = fundedKeypair(rpc);
    fundTokenAccount(rpc, authority, payer.publicKey, mint, decimals, 1_000_000_000n);
    hotWallet = fundedKeypair(rpc);
    fundTokenAccount(rpc, authority, hotWallet.publicKey, mint, decimals, 0n);
    dir = mkdtempSync(join(tmpdir(), 'deposit-addresses-solana-'));
    const corridors = JSON.parse(readFileSync(defaultCorridorsPath, 'utf8')) as { mints: { SOLANA: { USDC: Record<string, unknown> } } };
    corridors.mints.SOLANA.USDC = { ...corridors.mints.SOLANA.USDC, identifier: mint.toBase58(), decimals };
    writeFileSync(join(dir, 'corridors.json'), JSON.stringify(corridors));
    writeFileSync(join(dir, 'chains.json'), JSON.stringify({
      SOLANA: {
        network: 'testnet',
        rpcUrl: rpc.url,
        depositAddress: Keypair.generate().publicKey.toBase58(), // the legacy shared wallet
        commitment: 'finalized',
        assets: { USDC: { mint: mint.toBase58(), decimals } },
        signerSecretEnv: hotWalletEnv,
        depositMasterSecretEnv: masterEnv,
      },
    }));
    process.env[hotWalletEnv] = JSON.stringify([...hotWallet.secretKey]);
    process.env[masterEnv] = randomBytes(32).toString('hex');
    h = await startServiceHarness({ env: { CHAINS_FILE: join(dir, 'chains.json'), CORRIDORS_FILE: join(dir, 'corridors.json') } });
    keyA = h.apiKeys[testPartners.kycOff] ?? '';
    keyB = h.apiKeys[testPartners.kycOn] ?? '';
  });
  after(() => teardown(
    () => h?.stop(),
    () => { delete process.env[hotWalletEnv]; },
    () => { delete process.env[masterEnv]; },
    () => { rmSync(dir, { recursive: true, force: true }); },
    () => rpc?.close(),
  ));

  /** A partner's wallet pays `amount` (token units, as payment_context gives it) to `owner`'s token account. */
  async function transferTo(owner: PublicKey, amount: number): Promise<string> {
    const baseUnits = BigInt(Math.round(amount * 10 ** decimals));
    const destination = associatedTokenAddress(owner, mint);
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    const transaction = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
      createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, destination, owner, mint),
      transferCheckedInstruction({ source: associatedTokenAddress(payer.publicKey, mint), mint, destination, owner: payer.publicKey }, baseUnits, decimals),
    );
    transaction.sign(payer);
    return connection.sendRawTransaction(transaction.serialize());
  }

  test('another partner cannot claim a real transfer into A\'s address; A is paid and A\'s address is swept to the hot wallet', async () => {
    const quoted = await api('POST', '/quote', { key: keyA, body: { ...payoutQuoteBody, network: 'SOLANA' } });
    assert.equal(quoted.status, 200, quoted.text);
    const a = await api('POST', '/transaction', { key: keyA, body: { quote_id: quoted.json['quote_id'], user_id: 'victim-litesvm', account_number: brebMobile } });
    assert.equal(a.status, 200, a.text);
    const aId = a.json['id'] as string;
    const aContext = a.json['payment_context'] as Record<string, unknown>;
    assert.equal(aContext['mintAddress'], mint.toBase58());
    const owner = new PublicKey(aContext['depositAddress'] as string);
    const signature = await transferTo(owner, aContext['amount'] as number);

    const reverse = await api('POST', '/quote/reverse', { key: keyB, body: { source_amount: aContext['amount'], crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'BREB', target_currency: 'COP' } });
    assert.equal(reverse.status, 200, reverse.text);
    const b = await api('POST', '/transaction', { key: keyB, body: { quote_id: reverse.json['quote_id'], user_id: 'thief-litesvm', account_number: brebMobile } });
    assert.equal(b.status, 200, b.text);
    const bId = b.json['id'] as string;
    assert.equal((b.json['payment_context'] as Record<string, unknown>)['amount'], aContext['amount']);

    const stolen = await api('POST', '/payments/notify', { key: keyB, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: bId } });
    assert.equal(stolen.status, 400, stolen.text);
    assert.match(stolen.json['reason'] as string, /this transaction's deposit account/);

    const own = await api('POST', '/payments/notify', { key: keyA, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: aId } });
    assert.equal(own.status, 202, own.text);
    const done = await untilStatus(h.baseUrl, keyA, aId, 'PAYMENT_COMPLETED');
    assert.equal(done['on_chain_tx_hash'], signature);
    assert.equal((await api('GET', `/transaction/${bId}`, { key: keyB })).json['status'], 'AWAITING_PAYMENT', 'B is not paid');

    const hotAccount = associatedTokenAddress(hotWallet.publicKey, mint);
    await eventually(() => {
      assert.equal(tokenBalance(rpc, associatedTokenAddress(owner, mint)), null, 'A\'s token account is swept and closed');
      assert.equal(tokenBalance(rpc, hotAccount), BigInt(Math.round((aContext['amount'] as number) * 10 ** decimals)), 'into the hot wallet');
    }, 20_000);
  });
});
