// Onramp destinations on real chains: Solana through litesvm behind a local JSON-RPC server
// (test/support/litesvm-rpc.ts), Celo through anvil (test/support/anvil.ts). First the account
// lookups themselves (what the chain says is at an address), then the composition root with a
// CHAINS_FILE naming both chains: POST /transaction refuses, with 400 account_unverifiable and a
// reason, a destination that is a Solana token account, a Celo contract, or our hot wallet, accepts a
// plain wallet, and answers 503 (retryable) while the chain cannot be asked.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import type { PublicKey } from '@solana/web3.js';
import { createPublicClient, createTestClient, createWalletClient, http, parseEther } from 'viem';
import type { Abi, Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PrivateKeyAccount } from 'viem/accounts';
import { celo } from 'viem/chains';
import { celoAccountLookup } from '../../src/chains/celo-accounts.ts';
import { solanaAccountLookup } from '../../src/chains/solana-accounts.ts';
import { associatedTokenAddress, tokenProgramId } from '../../src/chains/solana-helpers.ts';
import { defaultCorridorsPath } from '../../src/config/corridors.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { startAnvil, type PrivateAnvil } from '../support/anvil.ts';
import { deployTestDepositFactory } from '../support/celo-factory.ts';
import { freePort } from '../support/processes.ts';
import { createMint, fundTokenAccount, fundedKeypair, startLiteSvmRpc, type LiteSvmRpc } from '../support/litesvm-rpc.ts';
import { teardown } from '../support/teardown.ts';

const decimals = 6;
const artifact = JSON.parse(readFileSync(new URL('../fixtures/erc20/TestToken.json', import.meta.url), 'utf8')) as { abi: Abi; bytecode: Hex };
const solanaSignerEnv = 'TEST_DESTINATIONS_SOLANA_KEY';
const solanaMasterEnv = 'TEST_DESTINATIONS_SOLANA_DEPOSIT_MASTER';
const celoSignerEnv = 'TEST_DESTINATIONS_CELO_KEY';

let rpc: LiteSvmRpc;
let anvil: PrivateAnvil;
let mintAuthority: Keypair;
let usdcMint: PublicKey;
let solanaHot: Keypair;
let solanaDeposit: Keypair;
let deployer: PrivateKeyAccount;
let celoHotKey: Hex;
let celoUsdc: Address;
/** A deployed deposit forwarder factory (Celo addresses are handed out only once it is verified). */
let depositFactory: Address;
let otherContract: Address;

async function deployToken(symbol: string): Promise<Address> {
  const wallet = createWalletClient({ account: deployer, chain: celo, transport: http(anvil.url) });
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: [`Test ${symbol}`, symbol, decimals, deployer.address, 1_000_000_000_000n] });
  const client = createPublicClient({ chain: celo, transport: http(anvil.url), cacheTime: 0 });
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 10_000, pollingInterval: 50 });
  assert.ok(receipt.contractAddress != null, 'the token was deployed');
  return receipt.contractAddress;
}

function newAddress(): Address {
  return privateKeyToAccount(generatePrivateKey()).address;
}

before(async () => {
  rpc = await startLiteSvmRpc();
  anvil = await startAnvil({ chainId: 42220 });
  mintAuthority = fundedKeypair(rpc);
  usdcMint = createMint(rpc, mintAuthority, decimals);
  solanaHot = fundedKeypair(rpc);
  solanaDeposit = Keypair.generate();
  fundTokenAccount(rpc, mintAuthority, solanaHot.publicKey, usdcMint, decimals, 100_000_000n);
  deployer = privateKeyToAccount(generatePrivateKey());
  celoHotKey = generatePrivateKey();
  const testClient = createTestClient({ mode: 'anvil', chain: celo, transport: http(anvil.url) });
  await testClient.setBalance({ address: deployer.address, value: parseEther('100') });
  celoUsdc = await deployToken('USDC');
  depositFactory = await deployTestDepositFactory(anvil.url, 42220, celoHotKey);
  otherContract = await deployToken('OTHER');
});

after(() => teardown(
  () => anvil?.stop(),
  () => rpc?.close(),
));

describe('account lookups', () => {
  test('Solana: token accounts and mints are token_account, programs are program, system accounts and unused keys are wallets', async () => {
    const lookup = solanaAccountLookup({ rpcUrl: rpc.url });
    const holder = fundedKeypair(rpc);
    const tokenAccount = fundTokenAccount(rpc, mintAuthority, holder.publicKey, usdcMint, decimals, 1_000_000n);
    assert.equal(await lookup.accountKind(tokenAccount.toBase58()), 'token_account');
    assert.equal(await lookup.accountKind(usdcMint.toBase58()), 'token_account');
    assert.equal(await lookup.accountKind(tokenProgramId.toBase58()), 'program');
    assert.equal(await lookup.accountKind(holder.publicKey.toBase58()), 'wallet');
    assert.equal(await lookup.accountKind(Keypair.generate().publicKey.toBase58()), 'wallet', 'a new wallet has no account yet');
  });

  test('Solana: a node that does not answer makes the lookup throw (never "a wallet")', async () => {
    const lookup = solanaAccountLookup({ rpcUrl: `http://127.0.0.1:${await freePort()}`, rpcTimeoutMs: 2_000 });
    await assert.rejects(lookup.accountKind(Keypair.generate().publicKey.toBase58()));
  });

  test('Celo: an address with code is a contract; an EOA, an unused address and an EIP-7702 delegated EOA are wallets', async () => {
    const lookup = celoAccountLookup({ rpcUrl: anvil.url, chainId: 42220 });
    assert.equal(await lookup.accountKind(celoUsdc), 'contract');
    assert.equal(await lookup.accountKind(deployer.address), 'wallet');
    assert.equal(await lookup.accountKind(newAddress()), 'wallet');
    const testClient = createTestClient({ mode: 'anvil', chain: celo, transport: http(anvil.url) });
    const delegated = newAddress();
    await testClient.setCode({ address: delegated, bytecode: `0xef0100${otherContract.slice(2).toLowerCase()}` });
    assert.equal(await lookup.accountKind(delegated), 'wallet');
    const withCode = newAddress();
    await testClient.setCode({ address: withCode, bytecode: '0x6001600155' });
    assert.equal(await lookup.accountKind(withCode), 'contract');
  });

  test('Celo: a node that does not answer makes the lookup throw', async () => {
    const lookup = celoAccountLookup({ rpcUrl: `http://127.0.0.1:${await freePort()}`, rpcTimeoutMs: 2_000 });
    await assert.rejects(lookup.accountKind(newAddress()));
  });
});

describe('acceptance against the live chains (composition root, CHAINS_FILE)', () => {
  let dataDir: string;
  let service: RunningService;
  const apiKey = `demo_${randomUUID().replaceAll('-', '')}`;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'onramp-destinations-live-'));
    // The corridors quote the tokens these chains run (the real mints are not deployed here).
    const corridors = JSON.parse(readFileSync(defaultCorridorsPath, 'utf8')) as { mints: Record<string, Record<string, { identifier: string }>> };
    const { SOLANA: solanaMints, CELO: celoMints } = corridors.mints;
    if (solanaMints?.['USDC'] === undefined || celoMints?.['USDC'] === undefined) throw new Error('the default corridors name USDC on SOLANA and CELO');
    solanaMints['USDC'].identifier = usdcMint.toBase58();
    celoMints['USDC'].identifier = celoUsdc;
    writeFileSync(join(dataDir, 'corridors.json'), JSON.stringify(corridors));
    writeFileSync(join(dataDir, 'chains.json'), JSON.stringify({
      SOLANA: {
        network: 'testnet',
        rpcUrl: rpc.url,
        depositAddress: solanaDeposit.publicKey.toBase58(),
        commitment: 'finalized',
        assets: { USDC: { mint: usdcMint.toBase58(), decimals } },
        signerSecretEnv: solanaSignerEnv,
        depositMasterSecretEnv: solanaMasterEnv,
      },
      CELO: {
        network: 'testnet',
        rpcUrl: anvil.url,
        chainId: 42220,
        depositAddress: newAddress(),
        depositFactory,
        confirmations: 1,
        assets: { USDC: { contract: celoUsdc, decimals } },
        signerSecretEnv: celoSignerEnv,
      },
    }));
    process.env[solanaSignerEnv] = JSON.stringify([...solanaHot.secretKey]);
    process.env[solanaMasterEnv] = randomBytes(32).toString('hex');
    process.env[celoSignerEnv] = celoHotKey;
    service = await startService(readEnv({
      DATA_DIR: dataDir,
      ROLE: 'all',
      SANDBOX: '1',
      CHAINS_FILE: join(dataDir, 'chains.json'),
      CORRIDORS_FILE: join(dataDir, 'corridors.json'),
      LOG_LEVEL: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug',
      PORT: '0',
      HOST: '127.0.0.1',
      GRPC_PORT: '0', ADMIN_TLS: 'off',
      PAYOUT_GRPC_PORT: '0',
      SHARDS: '4',
      DEMO_API_KEY: apiKey,
      OPS_API_KEY: `ops_${randomUUID().replaceAll('-', '')}`,
    }));
  });

  after(async () => {
    await service?.stop();
    delete process.env[solanaSignerEnv];
    delete process.env[solanaMasterEnv];
    delete process.env[celoSignerEnv];
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function call(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`http://127.0.0.1:${service.port ?? 0}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-API-Key': apiKey },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function acceptTo(network: Network, destination: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const quoted = await call('/quote/onramp', { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network, payment_method: 'PIX' });
    assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
    return call('/transaction', { quote_id: quoted.body.quote_id, user_id: `u-${randomUUID()}`, account_number: destination });
  }

  function assertRefused(answer: { status: number; body: Record<string, unknown> }, reason: RegExp): void {
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'account_unverifiable');
    assert.match(String(answer.body.reason), reason);
  }

  test('Solana: a token account is refused (its owner is accepted), the hot wallet and the deposit token account too', async () => {
    const owner = fundedKeypair(rpc);
    const tokenAccount = fundTokenAccount(rpc, mintAuthority, owner.publicKey, usdcMint, decimals, 0n);
    assertRefused(await acceptTo('SOLANA', tokenAccount.toBase58()), /token account/);
    assertRefused(await acceptTo('SOLANA', solanaHot.publicKey.toBase58()), /our own addresses/);
    const depositTokenAccount = fundTokenAccount(rpc, mintAuthority, solanaDeposit.publicKey, usdcMint, decimals, 0n);
    assert.equal(depositTokenAccount.toBase58(), associatedTokenAddress(solanaDeposit.publicKey, usdcMint).toBase58());
    assertRefused(await acceptTo('SOLANA', depositTokenAccount.toBase58()), /token account/);
    const wallet = await acceptTo('SOLANA', owner.publicKey.toBase58());
    assert.equal(wallet.status, 200, JSON.stringify(wallet.body));
  });

  test('Celo: a contract is refused, the hot wallet too; a plain address is accepted; a node down is 503 (retryable)', async () => {
    assertRefused(await acceptTo('CELO', otherContract), /contract/);
    assertRefused(await acceptTo('CELO', privateKeyToAccount(celoHotKey).address), /our own addresses/);
    const wallet = await acceptTo('CELO', newAddress());
    assert.equal(wallet.status, 200, JSON.stringify(wallet.body));
    await anvil.stop(); // last: the node is gone for the rest of this file
    const down = await acceptTo('CELO', newAddress());
    assert.equal(down.status, 503, JSON.stringify(down.body));
    assert.equal(down.body.retryable, true);
  });
});
