// The real network adapters, by network, for the networks the chains file configures (the others
// use the sandbox chain in sandbox mode and are not offered otherwise).
import type { Network } from '../domain/assets.ts';
import type { LiveChainFactory } from './chain-services.ts';
import { createStellarChain } from './stellar.ts';
import { sendJournalOnStore } from './chains.ts';
import { solanaAdapterFromConfig } from './solana.ts';
import { celoAdapterFromConfig } from './celo.ts';

export const liveChainFactories: Partial<Record<Network, LiveChainFactory>> = {
  STELLAR: (setup, ctx) => {
    if (setup.network !== 'STELLAR') throw new Error('not a Stellar setup');
    return createStellarChain({ config: setup.config, store: ctx.store, log: ctx.log.child({ component: 'stellar' }), clock: ctx.clock });
  },
  SOLANA: (setup, ctx) => {
    if (setup.network !== 'SOLANA') throw new Error('not a Solana setup');
    return { adapter: solanaAdapterFromConfig(setup.config, { journal: sendJournalOnStore(ctx.store), nowMs: () => ctx.clock.nowMs() }) };
  },
  CELO: (setup, ctx) => {
    if (setup.network !== 'CELO') throw new Error('not a Celo setup');
    return { adapter: celoAdapterFromConfig(setup.config, { journal: sendJournalOnStore(ctx.store), nowMs: () => ctx.clock.nowMs() }) };
  },
};
