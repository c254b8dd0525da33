// A deployed DepositForwarderFactory on a test EVM node (anvil), for tests that run the service with
// Celo live: the service hands out Celo deposit addresses only once its configured factory is
// verified on chain (src/chains/deposit-setup-gate.ts). Deployed with the operators' own script.
import { createTestClient, http, parseEther, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { celo } from 'viem/chains';
import { deployDepositFactory } from '../../scripts/celo-deploy-factory.ts';

/** Deploys a factory whose treasury is the hot wallet of `hotWalletKey` (a fresh one when absent). */
export async function deployTestDepositFactory(rpcUrl: string, chainId: number, hotWalletKey: Hex = generatePrivateKey()): Promise<Address> {
  const testClient = createTestClient({ mode: 'anvil', chain: { ...celo, id: chainId }, transport: http(rpcUrl) });
  await testClient.setBalance({ address: privateKeyToAccount(hotWalletKey).address, value: parseEther('10') });
  const deployed = await deployDepositFactory({ rpcUrl, chainId, hotWalletKey, admin: privateKeyToAccount(generatePrivateKey()).address });
  return deployed.factory;
}
