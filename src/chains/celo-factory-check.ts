// The start-up check of Celo's deposit factory: the configured `depositFactory` must be a deployed
// DepositForwarderFactory whose forwarder is the one this build derives addresses from
// (celo-forwarders.ts). Otherwise the addresses handed to partners would not be the ones the
// factory deploys, and whatever reached them could never be swept.
import {
  BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, ExecutionRevertedError,
} from 'viem';
import type { Address, Hex, PublicClient } from 'viem';
import { DepositSetupError } from './deposit-addresses.ts';
import { depositForwarderFactoryAbi } from './celo-contracts.ts';
import { forwarderInitCodeHash } from './celo-forwarders.ts';

/** The configured depositFactory is not a factory this build can use (nothing deployed, another forwarder). */
export class DepositFactoryError extends DepositSetupError {
  override readonly name = 'DepositFactoryError';
}

/**
 * Rejects with a DepositFactoryError when `factory` has no code on the chain or does not deploy
 * this build's forwarder, with the RPC error when the node cannot answer.
 */
export async function checkForwarderFactory(client: PublicClient, factory: Address, chainId: number): Promise<void> {
  const code = await client.getCode({ address: factory });
  if (code === undefined || code === '0x') {
    throw new DepositFactoryError(`CELO depositFactory ${factory} has no code on chain ${chainId} (deploy it: npm run celo:deploy-factory)`);
  }
  let reported: Hex | null = null;
  try {
    reported = await client.readContract({ address: factory, abi: depositForwarderFactoryAbi, functionName: 'forwarderInitCodeHash' });
  } catch (error) {
    // A contract without that function reverts or answers nothing; anything else is the network.
    const notOurs = (cause: unknown): boolean =>
      cause instanceof ExecutionRevertedError || cause instanceof ContractFunctionRevertedError || cause instanceof ContractFunctionZeroDataError;
    if (!(error instanceof BaseError && error.walk(notOurs) !== null)) throw error;
  }
  if (reported !== forwarderInitCodeHash) {
    throw new DepositFactoryError(`CELO depositFactory ${factory} does not deploy this build's forwarder: its addresses would not be ours`);
  }
}
