// The onramp destination check over the sandbox chain, as createChainServices builds it for sandbox
// networks, for tests that build the onramp pieces themselves.
import type { ChainSetup, ChainSetups } from '../../src/chains/config.ts';
import { createDestinationCheck, type DestinationCheck } from '../../src/chains/destinations.ts';
import { SandboxChain } from '../../src/chains/sandbox-chain.ts';
import type { SnapshotStore } from '../../src/store/store.ts';

export function sandboxDestinations(store: SnapshotStore, setups: ChainSetups, clock: { nowMs(): number }): DestinationCheck {
  const sandbox = Object.values(setups).filter((setup): setup is ChainSetup => setup !== undefined);
  const chain = new SandboxChain({ store, clock, setups: sandbox });
  return createDestinationCheck({ setups, hotWallets: {}, lookups: new Map(sandbox.map((setup) => [setup.network, chain.accounts(setup.network)])) });
}
