// The real network adapters, by network, for the networks the chains file configures (the others
// use the sandbox chain in sandbox mode and are not offered otherwise).
import { Networks } from '@stellar/stellar-sdk';
import type { Network } from '../domain/assets.ts';
import type { LiveChainFactory } from './chain-services.ts';
import { createStellarChain } from './stellar.ts';
import { sendJournalOnStore } from './chains.ts';
import { solanaAdapterFromConfig } from './solana.ts';
import { celoAdapterFromConfig } from './celo-config.ts';
import { celoAccountLookup } from './celo-accounts.ts';
import { solanaAccountLookup } from './solana-accounts.ts';

export const liveChainFactories: Partial<Record<Network, LiveChainFactory>> = {
  STELLAR: (setup, ctx) => {
    if (setup.network !== 'STELLAR') throw new Error('not a Stellar setup');
    // A chain declared testnet signs for the testnet: its transactions are invalid on the public network.
    const networkPassphrase = setup.config.network === 'testnet' ? Networks.TESTNET : Networks.PUBLIC;
    const chain = createStellarChain({ config: setup.config, networkPassphrase, store: ctx.store, log: ctx.log.child({ component: 'stellar' }), clock: ctx.clock });
    return { ...chain, hotWallet: chain.adapter.hotWallet };
  },
  SOLANA: (setup, ctx) => {
    if (setup.network !== 'SOLANA') throw new Error('not a Solana setup');
    const adapter = solanaAdapterFromConfig(setup.config, { journal: sendJournalOnStore(ctx.store), nowMs: () => ctx.clock.nowMs() });
    const accounts = solanaAccountLookup({ rpcUrl: setup.config.rpcUrl, commitment: setup.config.commitment });
    return { adapter, accounts, hotWallet: adapter.hotWallet?.toBase58() ?? null };
  },
  CELO: (setup, ctx) => {
    if (setup.network !== 'CELO') throw new Error('not a Celo setup');
    const adapter = celoAdapterFromConfig(setup.config, { journal: sendJournalOnStore(ctx.store), nowMs: () => ctx.clock.nowMs() });
    const accounts = celoAccountLookup({ rpcUrl: setup.config.rpcUrl, chainId: setup.config.chainId });
    return { adapter, accounts, hotWallet: adapter.hotWallet };
  },
};
