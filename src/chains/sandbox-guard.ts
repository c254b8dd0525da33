// Sandbox mode next to live chains. Sandbox mode brings the sandbox rail (PIX and Bre-B that neither
// pay nor receive real fiat), the /sandbox/* helpers that fake money coming in, and a demo partner.
// With live chains in CHAINS_FILE (still the only way to run a real chain, since the sandbox rail
// is the only rail), fake money must never move real money:
//   - the helpers refuse a transaction on any live chain, testnet or mainnet
//     (src/chains/chain-services.ts for deposits, src/onramp/sandbox-driver.ts for PIX payments);
//   - the delivery worker never sends on a live chain for a payment of the sandbox rail
//     (src/onramp/delivery-worker.ts, src/onramp/sandbox-funding.ts);
//   - and since a slip there would cost real money, sandbox mode with a MAINNET chain does not
//     start at all unless the operator says SANDBOX_WITH_MAINNET=i-understand (this module).
// Staging on testnets with the sandbox rail (real deposits, simulated fiat payouts) needs no
// override. Decisions: docs/security.md, "Fake money never moves real money (sandbox)".
import { sandboxWithMainnetConsent } from '../config/env.ts';
import { networks, type Network } from '../domain/assets.ts';
import type { ChainsFile } from './config.ts';

/** The networks the chains file declares as mainnet, in the order of `networks`. */
export function mainnetNetworks(file: ChainsFile | null): Network[] {
  if (file === null) return [];
  return networks.filter((network) => file[network]?.network === 'mainnet');
}

/**
 * Why this process must not start, or null. Only sandbox mode with a mainnet chain and without the
 * operator's consent is refused; the message names the chains and both ways out.
 */
export function sandboxStartRefusal(file: ChainsFile | null, options: { readonly sandbox: boolean; readonly sandboxWithMainnet: boolean }): string | null {
  const mainnet = mainnetNetworks(file);
  if (!options.sandbox || mainnet.length === 0 || options.sandboxWithMainnet) return null;
  return (
    `sandbox mode (SANDBOX=1) with mainnet chains in CHAINS_FILE: ${mainnet.join(', ')} ${mainnet.length === 1 ? 'is' : 'are'} mainnet. ` +
    'The sandbox rail, its helpers and the demo partner would run next to real money. ' +
    `Set SANDBOX=0, point those chains at a testnet, or set SANDBOX_WITH_MAINNET=${sandboxWithMainnetConsent} to start anyway.`
  );
}
