// The Chains port: everything the service asks of a blockchain. One adapter per network family
// (Stellar via Horizon, Solana via JSON-RPC, Celo via viem) and the sandbox chain that the demo and
// the end-to-end tests drive; all of them pass one contract suite where the behaviour overlaps.
import type { CryptoAsset, Network } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import type { JsonObject, PutIfAbsentResult, SnapshotStore } from '../store/store.ts';

/** A transfer of the deposit asset into our deposit address, as the chain reports it. */
export interface ObservedTransfer {
  readonly network: Network;
  /** Stellar and Celo: transaction hash; Solana: signature. */
  readonly onChainId: string;
  /** The asset as named to the partner (USDT on Celo stays USDT here). */
  readonly asset: CryptoAsset;
  /** Exact amount in token units (base units ÷ 10^decimals). */
  readonly amount: Decimal;
  /** Where a refund goes: the sending account / owner / address. */
  readonly sender: string;
  /** Stellar: the transaction's text memo; null elsewhere. */
  readonly memo: string | null;
  /** Chain time of the block/ledger, epoch ms (informational; lateness is judged at detection). */
  readonly observedAtMs: number;
}

/** Verifying a reported transaction (Solana/Celo notify, ops reconcile) has these outcomes. */
export type VerifyResult =
  | { readonly status: 'found'; readonly transfers: readonly ObservedTransfer[] }
  /** The transaction exists but is failed/reverted, or moves nothing of ours to our address. */
  | { readonly status: 'invalid'; readonly reason: string }
  /** Not on chain (yet), or not at the required commitment / confirmation depth. */
  | { readonly status: 'not_found'; readonly reason: string };

/** Sending crypto (a refund, or an onramp delivery) is idempotent by `idempotencyKey`. */
export interface SendRequest {
  readonly network: Network;
  readonly asset: CryptoAsset;
  readonly amount: Decimal;
  readonly destination: string;
  /** Derived from the transaction (and deposit): a retry never sends twice. */
  readonly idempotencyKey: string;
  /** Stellar: optional text memo. */
  readonly memo?: string;
}

export type SendResult =
  | { readonly status: 'confirmed'; readonly onChainId: string }
  /** Broadcast, not yet final: ask again later with the same idempotency key. */
  | { readonly status: 'pending'; readonly onChainId: string }
  | { readonly status: 'failed'; readonly reason: string; readonly retryable: boolean };

/** One network's adapter. */
export interface ChainAdapter {
  readonly network: Network;
  /** Look a reported transaction up and extract the transfers into our deposit address. */
  verify(onChainId: string): Promise<VerifyResult>;
  /** Send crypto from our hot wallet, at most once per idempotency key. */
  send(request: SendRequest): Promise<SendResult>;
}

/** Stellar-style networks push payments to us; the watcher hands each to `onTransfer` in order. */
export interface TransferWatcher {
  readonly network: Network;
  /** Starts streaming from the persisted cursor; `onTransfer` must resolve before the cursor moves. */
  start(onTransfer: (transfer: ObservedTransfer, cursor: string) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
  /** Visible health: a silent watcher is an alert, not a success. */
  status(): WatcherStatus;
}

export interface WatcherStatus {
  readonly network: Network;
  /** 'stale': no contact with the chain for a while and its health probe failed (an alert). */
  readonly state: 'starting' | 'streaming' | 'reconnecting' | 'stale' | 'stopped';
  readonly cursor: string | null;
  readonly lastEventAtMs: number | null;
  readonly reconnects: number;
  readonly lastError: string | null;
}

/**
 * Where an adapter records a signed transaction BEFORE broadcasting it, so that a retry with the
 * same idempotency key rebroadcasts the same bytes instead of signing a second transfer.
 * `putIfAbsent` must be atomic: of two racing writers exactly one gets 'inserted'.
 */
export interface SendJournal {
  get(key: string): Promise<JsonObject | null>;
  putIfAbsent(key: string, record: JsonObject): Promise<PutIfAbsentResult>;
}

/** The SnapshotStore (LMDB or MongoDB) as a SendJournal: one read-model collection of records. */
export function sendJournalOnStore(
  store: Pick<SnapshotStore, 'get' | 'putIfAbsent'>,
  collection = 'chain_sends',
): SendJournal {
  return {
    get: async (key) => store.get(collection, key),
    putIfAbsent: async (key, record) => store.putIfAbsent(collection, key, record),
  };
}

/**
 * What is at an address, for the question "can this receive tokens as a wallet?" (onramp
 * destinations): `wallet` (a plain account, or nothing yet: a new wallet), `token_account` (Solana:
 * an account of the SPL Token program — a token account or a mint), `program` (Solana: executable)
 * or `contract` (EVM: code at the address). Tokens sent to the last three as if to a wallet are
 * lost or land where nobody expects them.
 */
export type AccountKind = 'wallet' | 'token_account' | 'program' | 'contract';

/**
 * A read-only chain lookup of one network. Throws when the chain cannot answer (node unreachable,
 * timeout): the caller treats that as retryable, never as "a wallet".
 */
export interface AccountLookup {
  readonly network: Network;
  accountKind(address: string): Promise<AccountKind>;
}
