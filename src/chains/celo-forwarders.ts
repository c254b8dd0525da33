// Pure derivations for Celo's per-transaction deposit addresses (contracts/DepositForwarder*.sol):
// the salt of a transaction, the forwarder address CREATE2 gives it under a factory, and the
// factory call that sweeps it. No I/O: the same transaction id gives the same address in every
// process, before anything is deployed.
//
// salt = keccak256(utf8("celo-deposit-v1:" + canonical transaction id)). A plain hash, not an HMAC
// with a secret: the forwarder can only ever pay the factory's treasury, so knowing an address
// (it is public on chain once funded anyway) gives nobody any power, while a secret would be one
// more thing whose loss strands every unswept deposit (no salt, no sweep). Anyone holding the id
// can recompute the address with standard tools. The prefix keeps these salts apart from any
// other use of the factory; "v1" leaves room for another scheme without colliding.
import { encodeFunctionData, getContractAddress, keccak256, stringToBytes } from 'viem';
import type { Address, Hex } from 'viem';
import { isCanonicalUuid } from '../domain/ids.ts';
import { depositForwarderBytecode, depositForwarderFactoryAbi } from './celo-contracts.ts';

export const depositSaltPrefix = 'celo-deposit-v1:';

/** keccak256 of the forwarder's creation code; the deployed factory must report the same. */
export const forwarderInitCodeHash: Hex = keccak256(depositForwarderBytecode);

/**
 * The CREATE2 salt of a transaction. Only canonical (lowercase) ids are accepted: two spellings of
 * one id must never give two addresses. Anything else is a bug upstream, so it throws.
 */
export function depositSalt(transactionId: string): Hex {
  if (!isCanonicalUuid(transactionId)) throw new Error(`not a canonical transaction id: ${JSON.stringify(String(transactionId).slice(0, 64))}`);
  return keccak256(stringToBytes(`${depositSaltPrefix}${transactionId}`));
}

/** Where `factory` deploys the forwarder of `salt` (checksummed), deployed or not. */
export function forwarderAddress(factory: Address, salt: Hex): Address {
  return getContractAddress({ opcode: 'CREATE2', from: factory, salt, bytecodeHash: forwarderInitCodeHash });
}

/** Calldata of `factory.sweep(salt, token)`: deploy the forwarder if needed, move its balance to the treasury. */
export function sweepCallData(salt: Hex, token: Address): Hex {
  return encodeFunctionData({ abi: depositForwarderFactoryAbi, functionName: 'sweep', args: [salt, token] });
}
