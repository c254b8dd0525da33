// Whether an address may receive onramp crypto as the user's wallet. The edge checks the address's
// shape (src/edge/routes/chain-formats.ts); this checks what it IS, in this order:
//   1. one of our own addresses on that network — a deposit address (current or rotated out) or the
//      hot wallet: a delivery there pays ourselves (and a deposit address would even be taken for a
//      deposit) — refused on every network, Stellar included;
//   2. the token itself (Stellar: the issuer, a payment to it burns the tokens; Solana: the mint;
//      Celo: the token contract) — refused;
//   3. on Solana and Celo, the chain is asked (AccountLookup): a Solana account of the SPL Token
//      program (a token account or a mint), a Solana program, or a Celo address with contract code
//      is refused; anything else (a plain account, or none yet: a new wallet) is a wallet. A lookup
//      that fails or does not answer in time is `unavailable` (retryable), never an acceptance.
// Stellar accounts need no lookup: an account id (G…) is always an account that can hold a
// trustline (contracts have C… addresses, which the shape check refuses).
import type { Network } from '../domain/assets.ts';
import type { AccountKind, AccountLookup } from './chains.ts';
import type { ChainSetups } from './config.ts';

export type DestinationRefusal = 'own_address' | 'token' | Exclude<AccountKind, 'wallet'>;

export type DestinationVerdict =
  | { readonly ok: true }
  /** Permanent for this address: the partner must name another wallet (400, with `reason`). */
  | { readonly ok: false; readonly refused: DestinationRefusal; readonly reason: string }
  /** The chain could not be asked now: retry later (503). `error` is for the logs only. */
  | { readonly ok: false; readonly unavailable: string; readonly error?: string };

export interface DestinationCheck {
  check(network: Network, address: string): Promise<DestinationVerdict>;
}

export interface DestinationCheckOptions {
  readonly setups: ChainSetups;
  /** Our hot wallets per network (the addresses sends go out from). */
  readonly hotWallets: Readonly<Partial<Record<Network, readonly string[]>>>;
  /** Chain lookups; SOLANA and CELO need one (without it their destinations are `unavailable`). */
  readonly lookups: ReadonlyMap<Network, AccountLookup>;
  /** Bound on one lookup (default 5 s). */
  readonly lookupTimeoutMs?: number;
}

export const destinationReasons: Readonly<Record<DestinationRefusal, string>> = {
  own_address: 'account_number is one of our own addresses (a deposit address or the hot wallet), not the user\'s wallet',
  token: 'account_number is the token itself (its issuer, mint or contract), not a wallet; tokens sent there are lost',
  token_account: 'account_number is a token account or mint (an account of the SPL Token program), not a wallet: name the wallet that owns it',
  program: 'account_number is a program, not a wallet',
  contract: 'account_number is a contract (it has code), not a wallet; tokens sent there could not be recovered',
};

const lookupNetworks: readonly Network[] = ['SOLANA', 'CELO'];

/** EVM addresses compare without case (checksummed or not); the others exactly. */
function normalized(network: Network, address: string): string {
  return network === 'CELO' ? address.toLowerCase() : address;
}

function ownAddresses(options: DestinationCheckOptions, network: Network): Set<string> {
  const setup = options.setups[network];
  const addresses = [...(options.hotWallets[network] ?? [])];
  if (setup !== undefined) {
    addresses.push(setup.depositAddress);
    if (setup.mode === 'live') addresses.push(...(setup.config.previousDepositAddresses ?? []));
  }
  return new Set(addresses.map((address) => normalized(network, address)));
}

function tokenAddresses(options: DestinationCheckOptions, network: Network): Set<string> {
  const assets = Object.values(options.setups[network]?.assets ?? {});
  return new Set(assets.filter((asset) => asset !== undefined).map((asset) => normalized(network, asset.identifier)));
}

async function within<T>(ms: number, run: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function createDestinationCheck(options: DestinationCheckOptions): DestinationCheck {
  const lookupTimeoutMs = options.lookupTimeoutMs ?? 5_000;
  // The addresses are fixed at start (configuration and keys): computed once per network.
  const own = new Map<Network, Set<string>>();
  const tokens = new Map<Network, Set<string>>();
  const refused = (reason: DestinationRefusal): DestinationVerdict => ({ ok: false, refused: reason, reason: destinationReasons[reason] });
  return {
    async check(network, address) {
      const key = normalized(network, address);
      let ours = own.get(network);
      if (ours === undefined) own.set(network, (ours = ownAddresses(options, network)));
      if (ours.has(key)) return refused('own_address');
      let tokenIds = tokens.get(network);
      if (tokenIds === undefined) tokens.set(network, (tokenIds = tokenAddresses(options, network)));
      if (tokenIds.has(key)) return refused('token');
      if (!lookupNetworks.includes(network)) return { ok: true };
      const lookup = options.lookups.get(network);
      if (lookup === undefined) return { ok: false, unavailable: `The destination wallet check on ${network}` };
      let kind: AccountKind;
      try {
        kind = await within(lookupTimeoutMs, lookup.accountKind(address));
      } catch (error) {
        return { ok: false, unavailable: `The destination wallet check on ${network}`, error: error instanceof Error ? error.message : String(error) };
      }
      return kind === 'wallet' ? { ok: true } : refused(kind);
    },
  };
}
