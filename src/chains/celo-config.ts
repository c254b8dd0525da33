// From the CELO section of CHAINS_FILE (src/chains/config.ts) to a live Celo adapter: the
// section's settings, plus what the running service supplies (the send journal on the store, its
// clock, its environment for the hot wallet key).
import type { CryptoAsset } from '../domain/assets.ts';
import type { SendJournal } from './chains.ts';
import type { CeloChainConfig } from './config.ts';
import { CeloAdapter } from './celo.ts';
import type { CeloAssetConfig } from './celo.ts';

/** What a live Celo adapter needs besides its CHAINS_FILE section. */
export interface CeloAdapterDependencies {
  readonly journal: SendJournal;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly nowMs?: () => number;
}

/** The adapter for the CELO section of CHAINS_FILE (src/chains/config.ts). */
export function celoAdapterFromConfig(config: CeloChainConfig, dependencies: CeloAdapterDependencies): CeloAdapter {
  const assets: Partial<Record<CryptoAsset, CeloAssetConfig>> = {};
  for (const asset of ['USDC', 'USDT'] as const) {
    const token = config.assets[asset];
    if (token !== undefined) assets[asset] = { contract: token.contract, decimals: token.decimals };
  }
  return new CeloAdapter({
    rpcUrl: config.rpcUrl,
    chainId: config.chainId,
    depositAddress: config.depositAddress,
    ...(config.previousDepositAddresses === undefined ? {} : { previousDepositAddresses: config.previousDepositAddresses }),
    depositFactory: config.depositFactory,
    ...(config.depositScanBlocks === undefined ? {} : { depositScanBlocks: config.depositScanBlocks }),
    confirmations: config.confirmations,
    assets,
    signerSecretEnv: config.signerSecretEnv,
    journal: dependencies.journal,
    ...(dependencies.env === undefined ? {} : { env: dependencies.env }),
    ...(dependencies.nowMs === undefined ? {} : { nowMs: dependencies.nowMs }),
  });
}
