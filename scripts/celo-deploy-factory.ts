// Deploys the Celo deposit forwarder factory once (contracts/DepositForwarderFactory.sol), from the
// hot wallet, with the hot wallet as treasury (where every sweep goes) and a separate admin (a cold
// key or a multisig: the only one who can point the treasury elsewhere). Prints the address to put
// in CHAINS_FILE as CELO.depositFactory.
//
//   CELO_SIGNER_KEY=… npm run celo:deploy-factory -- --rpc-url https://… --admin 0x… [--chain-id 42220] [--key-env CELO_SIGNER_KEY]
//
// Run it ONCE per chain: every deposit address derives from the factory's address, so the service
// uses exactly one factory. If the command is interrupted, look the hot wallet up on an explorer
// before running it again. docs/solana-celo.md, "Celo: per-transaction deposit addresses".
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createPublicClient, createWalletClient, http } from 'viem';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { celo } from 'viem/chains';
import { parseAddress, privateKeyFromSecret, sameAddress, zeroAddress } from '../src/chains/celo-helpers.ts';
import { depositForwarderFactoryAbi, depositForwarderFactoryBytecode } from '../src/chains/celo-contracts.ts';
import { forwarderInitCodeHash } from '../src/chains/celo-forwarders.ts';
import { describeError } from '../src/chains/send-helpers.ts';

export interface DeployFactoryOptions {
  readonly rpcUrl: string;
  /** The node must serve this chain id (42220: Celo mainnet). */
  readonly chainId: number;
  /** The hot wallet's private key: it pays the deployment and becomes the treasury. */
  readonly hotWalletKey: Hex;
  /** Who may change the treasury; must not be the hot wallet. */
  readonly admin: string;
  readonly receiptTimeoutMs?: number;
}

export interface DeployedFactory {
  readonly factory: Address;
  readonly treasury: Address;
  readonly admin: Address;
  readonly forwarderInitCodeHash: Hex;
  readonly transactionHash: Hex;
}

export async function deployDepositFactory(options: DeployFactoryOptions): Promise<DeployedFactory> {
  const hotWallet = privateKeyToAccount(options.hotWalletKey);
  const admin = parseAddress(options.admin);
  if (admin === null || admin === zeroAddress) throw new Error('--admin is not an address');
  // An admin the hot wallet's key controls would let a leaked hot key redirect every sweep.
  if (sameAddress(admin, hotWallet.address)) throw new Error('--admin must not be the hot wallet: use a cold key or a multisig');
  const chain = { ...celo, id: options.chainId };
  const client = createPublicClient({ chain, transport: http(options.rpcUrl, { retryCount: 1 }) });
  const served = await client.getChainId();
  if (served !== options.chainId) throw new Error(`the RPC node serves chain id ${served}, expected ${options.chainId}`);
  const wallet = createWalletClient({ account: hotWallet, chain, transport: http(options.rpcUrl, { retryCount: 0 }) });
  const transactionHash = await wallet.deployContract({
    abi: depositForwarderFactoryAbi,
    bytecode: depositForwarderFactoryBytecode,
    args: [hotWallet.address, admin],
  });
  const receipt = await client.waitForTransactionReceipt({ hash: transactionHash, timeout: options.receiptTimeoutMs ?? 180_000 });
  if (receipt.status !== 'success' || receipt.contractAddress == null) throw new Error(`the deployment ${transactionHash} reverted`);
  const factory = receipt.contractAddress;
  const read = async <Name extends 'treasury' | 'admin' | 'forwarderInitCodeHash'>(functionName: Name) =>
    client.readContract({ address: factory, abi: depositForwarderFactoryAbi, functionName });
  const deployed = { treasury: await read('treasury'), admin: await read('admin'), hash: await read('forwarderInitCodeHash') };
  if (!sameAddress(deployed.treasury, hotWallet.address) || !sameAddress(deployed.admin, admin) || deployed.hash !== forwarderInitCodeHash) {
    throw new Error(`the factory at ${factory} does not report the expected treasury, admin and forwarder`);
  }
  return { factory, treasury: deployed.treasury, admin: deployed.admin, forwarderInitCodeHash: deployed.hash, transactionHash };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'rpc-url': { type: 'string' },
      admin: { type: 'string' },
      'chain-id': { type: 'string', default: String(celo.id) },
      'key-env': { type: 'string', default: 'CELO_SIGNER_KEY' },
    },
    strict: true,
  });
  const rpcUrl = values['rpc-url'];
  if (rpcUrl === undefined || !/^https?:\/\//.test(rpcUrl)) throw new Error('--rpc-url must be an http(s) URL');
  if (values.admin === undefined) throw new Error('--admin is required (a cold key or a multisig, never the hot wallet)');
  const chainId = Number(values['chain-id']);
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error('--chain-id must be a positive integer');
  const keyEnv = values['key-env'];
  const key = privateKeyFromSecret(process.env[keyEnv] ?? '');
  // The message names the variable, never its content.
  if (key === null) throw new Error(`${keyEnv} does not hold the hot wallet's 32-byte hex private key`);
  const deployed = await deployDepositFactory({ rpcUrl, chainId, hotWalletKey: key, admin: values.admin });
  console.log(JSON.stringify({
    depositFactory: deployed.factory,
    treasury: deployed.treasury,
    admin: deployed.admin,
    forwarderInitCodeHash: deployed.forwarderInitCodeHash,
    transactionHash: deployed.transactionHash,
  }, null, 2));
  console.log(`Put "depositFactory": "${deployed.factory}" in the CELO section of CHAINS_FILE.`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    // RPC errors can repeat the URL, which often carries an API key: describeError strips it.
    console.error(describeError(error));
    process.exitCode = 1;
  });
}
