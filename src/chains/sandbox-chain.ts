// The sandbox chain: a pretend ledger for every network that runs in sandbox mode, behind the same
// ChainAdapter / TransferWatcher port as the real networks. Its ledger lives in the store
// (collection `sandbox_chain`), so every process of a deployment sees the same transfers: a deposit
// made through the edge's test helper is verified by the watcher role, a refund sent by the refund
// worker is visible to the tests.
//
// - `deposit()` makes a transfer into the network's deposit address (or any other address). On
//   Stellar it is appended to the network's feed, which the sandbox watcher streams like Horizon's
//   payment stream, so a memo payment is detected without a notify. On Solana and Celo the caller
//   gets the `on_chain_tx` to report with POST /payments/notify (the watcher also finds it by
//   address, see `perTransaction`).
// - `send()` (refunds, onramp deliveries) is idempotent by key: the hash is derived from the key,
//   and the first request is recorded; the same key with another request is refused.
// - `accounts(network)` answers what is at an address (the AccountLookup port) from the ledger: the
//   network's token identifiers are the token itself (a Solana mint is a token-program account, a
//   Celo token is a contract); `registerAccount` records other token accounts or contracts (tests,
//   the demo); anything else is a wallet.
// - `perTransaction(network)` (Solana, Celo): the PerTransactionDeposits port. Addresses are
//   derived from the transaction id (well-formed, the same in every process); the ledger keeps the
//   chain transactions touching each such address, from which `transfersInto` lists deposits and
//   the balance is computed; `sweep` moves that balance to the network's hot wallet (the sandbox
//   hot wallet is the network's shared deposit address, which refunds are sent from too).
// - Knobs (stored, so they apply to every process): verify outage, send outage, permanent send
//   failure, sends that stay pending for N polls, watcher outage, lookup outage.
// - `watcher(network)` streams the network's feed (sandbox-watcher.ts).
//
// Ledger documents (ids are prefixed by kind):
//   tx:<network>:<onChainId>        a transfer (deposit, send or sweep)
//   send:<network>:<sha256(key)>    the first send request of an idempotency key
//   sweep:<network>:<sha256(key)>   the sweep of an idempotency key
//   at:<network>:<address>:<seq>    the n-th transfer touching a Solana/Celo address, gap-free
//   feed:<network>:<seq>            the Stellar feed, gap-free: seq n exists before n+1
//   head:<network>                  where the feed probably ends (a hint)
//   knobs:<network>, cursor:<network>
//   account:<network>:<address>     what a test said is at an address (a token account, a contract)
import { createHash, randomBytes } from 'node:crypto';
import type { CryptoAsset, Network } from '../domain/assets.ts';
import { decimalFromExactString, rescale, toFixedString, type Decimal } from '../domain/money.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import type { AccountKind, AccountLookup, ChainAdapter, ObservedTransfer, SendRequest, SendResult, TransferWatcher, VerifyResult } from './chains.ts';
import { base58Encode, isAddressOf, stellarAccountFromPublicKey, type ChainSetup } from './config.ts';
import type { PerTransactionDeposits, SweepRequest, SweepResult } from './deposit-addresses.ts';
import { SandboxTransferWatcher, type SandboxFeed } from './sandbox-watcher.ts';

export const sandboxChainCollection = 'sandbox_chain';

export interface SandboxKnobs {
  /** verify() throws, as an unreachable RPC node would. */
  readonly verifyOutage: boolean;
  /** send() fails with a retryable error. */
  readonly sendOutage: boolean;
  /** send() fails with a non-retryable error (e.g. the hot wallet is empty). */
  readonly sendRejects: boolean;
  /** A new send stays `pending` for this many calls before it is confirmed. */
  readonly sendPendingPolls: number;
  /** The watcher stops streaming (state `reconnecting`) until cleared. */
  readonly watcherOutage: boolean;
  /** Account lookups (what is at an address) throw, as an unreachable RPC node would. */
  readonly lookupOutage: boolean;
}

export const defaultKnobs: SandboxKnobs = {
  verifyOutage: false,
  sendOutage: false,
  sendRejects: false,
  sendPendingPolls: 0,
  watcherOutage: false,
  lookupOutage: false,
};

export interface SandboxTransfer {
  /** deposit: into any address; send: from the hot wallet; sweep: a per-transaction address to the hot wallet. */
  readonly kind: 'deposit' | 'send' | 'sweep';
  readonly network: Network;
  readonly onChainId: string;
  readonly asset: CryptoAsset;
  readonly amount: Decimal;
  readonly sender: string;
  readonly destination: string;
  readonly memo: string | null;
  /** A failed (reverted) transaction: on chain, but it moved nothing. */
  readonly succeeded: boolean;
  readonly atMs: number;
}

export interface SandboxDepositRequest {
  readonly network: Network;
  readonly asset: CryptoAsset;
  readonly amount: Decimal;
  /** Stellar text memo (at most 28 bytes). */
  readonly memo?: string | null;
  /** Defaults to a fresh well-formed address. */
  readonly sender?: string;
  /** Defaults to the network's deposit address. */
  readonly destination?: string;
  /** A transaction that failed on chain (it exists, it moved nothing). */
  readonly failed?: boolean;
}

const feedSeqDigits = 12;
const feedScanMax = 100_000;
const stellarMemoBytesMax = 28;
/** Transfers kept per sandbox address (deposits and sweeps); more are refused. */
const addressTransfersMax = 1_000;

function feedId(network: Network, seq: number): string {
  return `feed:${network}:${String(seq).padStart(feedSeqDigits, '0')}`;
}

function addressEntryId(network: Network, address: string, seq: number): string {
  return `at:${network}:${address}:${String(seq).padStart(feedSeqDigits, '0')}`;
}

/** Addresses as the ledger keys them: EVM addresses in lower case. */
function addressKey(network: Network, address: string): string {
  return network === 'CELO' ? address.toLowerCase() : address;
}

/** A sandbox per-transaction deposit address: well-formed, derived from the id, the same in every process. */
export function sandboxTransactionAddress(network: 'SOLANA' | 'CELO', transactionId: string): string {
  const seed = createHash('sha256').update(`sandbox-transaction-address:${network}:${transactionId}`).digest();
  return network === 'SOLANA' ? base58Encode(seed) : `0x${seed.subarray(0, 20).toString('hex')}`;
}

function transferDoc(transfer: SandboxTransfer): JsonObject {
  return {
    kind: transfer.kind,
    network: transfer.network,
    onChainId: transfer.onChainId,
    asset: transfer.asset,
    amount: toFixedString(transfer.amount),
    sender: transfer.sender,
    destination: transfer.destination,
    memo: transfer.memo,
    succeeded: transfer.succeeded,
    atMs: transfer.atMs,
  };
}

function transferFromDoc(doc: JsonObject): SandboxTransfer {
  return {
    kind: doc.kind === 'send' || doc.kind === 'sweep' ? doc.kind : 'deposit',
    network: doc.network as Network,
    onChainId: String(doc.onChainId),
    asset: doc.asset as CryptoAsset,
    amount: decimalFromExactString(String(doc.amount)),
    sender: String(doc.sender),
    destination: String(doc.destination),
    memo: typeof doc.memo === 'string' ? doc.memo : null,
    succeeded: doc.succeeded === true,
    atMs: Number(doc.atMs),
  };
}

/** A fresh well-formed address of `network` (a sandbox sender). */
export function randomAddress(network: Network): string {
  switch (network) {
    case 'STELLAR':
      return stellarAccountFromPublicKey(randomBytes(32));
    case 'SOLANA':
      return base58Encode(randomBytes(32));
    case 'CELO':
      return `0x${randomBytes(20).toString('hex')}`;
  }
}

/** A well-formed transaction id: Stellar 64 hex, Celo 0x + 64 hex, Solana base58 of 64 bytes. */
function onChainIdFrom(network: Network, bytes64: Uint8Array): string {
  const hex = Buffer.from(bytes64.subarray(0, 32)).toString('hex');
  switch (network) {
    case 'STELLAR':
      return hex;
    case 'CELO':
      return `0x${hex}`;
    case 'SOLANA': {
      // A signature whose first byte is zero would encode shorter than real ones; avoid it.
      const bytes = Uint8Array.from(bytes64);
      bytes[0] = (bytes[0] ?? 0) | 1;
      return base58Encode(bytes);
    }
  }
}

export interface SandboxChainOptions {
  readonly store: SnapshotStore;
  readonly clock: { nowMs(): number };
  /** The sandbox networks and their deposit addresses. */
  readonly setups: readonly ChainSetup[];
}

export class SandboxChain {
  private readonly setups = new Map<Network, ChainSetup>();

  constructor(private readonly options: SandboxChainOptions) {
    for (const setup of options.setups) this.setups.set(setup.network, setup);
  }

  networks(): Network[] {
    return [...this.setups.keys()];
  }

  depositAddress(network: Network): string {
    return this.setupOf(network).depositAddress;
  }

  private setupOf(network: Network): ChainSetup {
    const setup = this.setups.get(network);
    if (setup === undefined) throw new Error(`${network} is not a sandbox network`);
    return setup;
  }

  async knobs(network: Network): Promise<SandboxKnobs> {
    const doc = await this.options.store.get(sandboxChainCollection, `knobs:${network}`);
    return { ...defaultKnobs, ...(doc as Partial<SandboxKnobs> | null) };
  }

  async setKnobs(network: Network, change: Partial<SandboxKnobs>): Promise<SandboxKnobs> {
    const next = { ...(await this.knobs(network)), ...change };
    if (!Number.isSafeInteger(next.sendPendingPolls) || next.sendPendingPolls < 0 || next.sendPendingPolls > 1_000) {
      throw new Error('sendPendingPolls must be an integer in [0, 1000]');
    }
    await this.options.store.put(sandboxChainCollection, `knobs:${network}`, { ...next });
    return next;
  }

  async transfer(network: Network, onChainId: string): Promise<SandboxTransfer | null> {
    const doc = await this.options.store.get(sandboxChainCollection, `tx:${network}:${onChainId}`);
    return doc === null ? null : transferFromDoc(doc);
  }

  /** A transfer arrives on the sandbox chain. Stellar transfers to our address enter the feed. */
  async deposit(request: SandboxDepositRequest): Promise<SandboxTransfer> {
    const setup = this.setupOf(request.network);
    const asset = setup.assets[request.asset];
    if (asset === undefined) throw new Error(`${request.asset} has no token on the sandbox ${request.network}`);
    if (request.amount.scale > asset.decimals) throw new Error(`the amount has more decimals than ${request.asset} (${asset.decimals})`);
    const memo = request.network === 'STELLAR' ? (request.memo ?? null) : null;
    if (memo !== null && Buffer.byteLength(memo, 'utf8') > stellarMemoBytesMax) throw new Error('a Stellar text memo holds at most 28 bytes');
    const transfer: SandboxTransfer = {
      kind: 'deposit',
      network: request.network,
      onChainId: onChainIdFrom(request.network, randomBytes(64)),
      asset: request.asset,
      amount: rescale(request.amount, asset.decimals, 'floor'),
      sender: request.sender ?? randomAddress(request.network),
      destination: request.destination ?? setup.depositAddress,
      memo,
      succeeded: request.failed !== true,
      atMs: this.options.clock.nowMs(),
    };
    await this.options.store.put(sandboxChainCollection, `tx:${transfer.network}:${transfer.onChainId}`, transferDoc(transfer));
    if (transfer.network === 'STELLAR' && transfer.succeeded && transfer.destination === setup.depositAddress) {
      await this.appendToFeed(transfer.network, transfer.onChainId);
    }
    if (transfer.network !== 'STELLAR') await this.appendToAddress(transfer.network, transfer.destination, transfer.onChainId);
    return transfer;
  }

  /** Records that `onChainId` touched `address` (first free sequence number, as the feed does). */
  private async appendToAddress(network: Network, address: string, onChainId: string): Promise<void> {
    const key = addressKey(network, address);
    for (let seq = 1; seq <= addressTransfersMax; seq += 1) {
      const inserted = await this.options.store.putIfAbsent(sandboxChainCollection, addressEntryId(network, key, seq), { onChainId });
      if (inserted.status === 'inserted') return;
    }
    throw new Error(`sandbox ${network}: more than ${addressTransfersMax} transfers at one address`);
  }

  /** The transfers that touched `address`, oldest first. */
  private async transfersAt(network: Network, address: string): Promise<SandboxTransfer[]> {
    const key = addressKey(network, address);
    const transfers: SandboxTransfer[] = [];
    for (let seq = 1; seq <= addressTransfersMax; seq += 1) {
      const entry = await this.options.store.get(sandboxChainCollection, addressEntryId(network, key, seq));
      if (entry === null) break;
      const transfer = await this.transfer(network, String(entry.onChainId));
      if (transfer === null) throw new Error(`sandbox address entry ${seq} names a missing transfer`);
      transfers.push(transfer);
    }
    return transfers;
  }

  /** What `address` holds of `asset`: its successful deposits less what was swept from it. */
  async balanceAt(network: Network, address: string, asset: CryptoAsset): Promise<Decimal> {
    const key = addressKey(network, address);
    let units = 0n;
    const decimals = this.setupOf(network).assets[asset]?.decimals ?? 0;
    for (const transfer of await this.transfersAt(network, address)) {
      if (!transfer.succeeded || transfer.asset !== asset) continue;
      const amount = rescale(transfer.amount, decimals, 'floor').units;
      if (transfer.kind === 'deposit' && addressKey(network, transfer.destination) === key) units += amount;
      if (transfer.kind === 'sweep' && addressKey(network, transfer.sender) === key) units -= amount;
    }
    return { units, scale: decimals };
  }

  /** Appends at the first free sequence number; putIfAbsent makes concurrent appenders take turns. */
  private async appendToFeed(network: Network, onChainId: string): Promise<number> {
    const head = await this.options.store.get(sandboxChainCollection, `head:${network}`);
    let seq = typeof head?.seq === 'number' ? head.seq : 1;
    for (let scanned = 0; scanned < feedScanMax; scanned += 1, seq += 1) {
      const inserted = await this.options.store.putIfAbsent(sandboxChainCollection, feedId(network, seq), { onChainId });
      if (inserted.status === 'inserted') {
        await this.options.store.put(sandboxChainCollection, `head:${network}`, { seq: seq + 1 });
        return seq;
      }
    }
    throw new Error('sandbox feed: no free sequence number found');
  }

  /** The feed entry after `cursor` (0 = from the start), or null at the end. */
  async nextInFeed(network: Network, cursor: number): Promise<{ seq: number; transfer: SandboxTransfer } | null> {
    const entry = await this.options.store.get(sandboxChainCollection, feedId(network, cursor + 1));
    if (entry === null) return null;
    const transfer = await this.transfer(network, String(entry.onChainId));
    if (transfer === null) throw new Error(`sandbox feed ${cursor + 1} names a missing transfer`);
    return { seq: cursor + 1, transfer };
  }

  async cursor(network: Network): Promise<number> {
    const doc = await this.options.store.get(sandboxChainCollection, `cursor:${network}`);
    return typeof doc?.seq === 'number' ? doc.seq : 0;
  }

  async saveCursor(network: Network, seq: number): Promise<void> {
    await this.options.store.put(sandboxChainCollection, `cursor:${network}`, { seq });
  }

  /** What the chain says about a reported transaction: the transfers into our (shared) deposit address. */
  async verify(network: Network, onChainId: string): Promise<VerifyResult> {
    return this.verifyTo(network, onChainId, this.depositAddress(network), 'The transaction moves no funds to the deposit address');
  }

  /** The transfers of `onChainId` into exactly `address` (a transaction's own deposit address). */
  async verifyInto(network: Network, onChainId: string, address: string): Promise<VerifyResult> {
    return this.verifyTo(network, onChainId, address, 'The transaction moves no funds to this transaction\'s deposit address');
  }

  private async verifyTo(network: Network, onChainId: string, address: string, elsewhere: string): Promise<VerifyResult> {
    if ((await this.knobs(network)).verifyOutage) throw new Error(`sandbox ${network}: the node is unreachable (outage knob)`);
    const transfer = await this.transfer(network, onChainId);
    if (transfer === null) return { status: 'not_found', reason: 'The transaction was not found on chain' };
    if (!transfer.succeeded) return { status: 'invalid', reason: 'The transaction failed on chain' };
    if (transfer.kind !== 'deposit' || addressKey(network, transfer.destination) !== addressKey(network, address)) {
      return { status: 'invalid', reason: elsewhere };
    }
    return { status: 'found', transfers: [observed(transfer)] };
  }

  /** Successful deposits into `address`, newest first, at most `limit`. */
  async transfersInto(network: Network, address: string, limit: number): Promise<string[]> {
    if ((await this.knobs(network)).verifyOutage) throw new Error(`sandbox ${network}: the node is unreachable (outage knob)`);
    const key = addressKey(network, address);
    return (await this.transfersAt(network, address))
      .filter((transfer) => transfer.kind === 'deposit' && transfer.succeeded && addressKey(network, transfer.destination) === key)
      .map((transfer) => transfer.onChainId)
      .reverse()
      .slice(0, Math.max(0, limit));
  }

  /**
   * Moves the whole balance of the transaction's address to the hot wallet, once per key: the
   * first sweep of a key is recorded and answered again to every retry.
   */
  async sweep(network: 'SOLANA' | 'CELO', request: SweepRequest): Promise<SweepResult> {
    const setup = this.setupOf(network);
    if ((await this.knobs(network)).sendOutage) return { status: 'failed', reason: 'sandbox send outage', retryable: true };
    const sweepId = `sweep:${network}:${createHash('sha256').update(request.idempotencyKey).digest('hex')}`;
    const existing = await this.options.store.get(sandboxChainCollection, sweepId);
    if (existing !== null) return { status: 'confirmed', onChainId: String(existing.onChainId) };
    if (setup.assets[request.asset] === undefined) return { status: 'failed', reason: `${request.asset} has no token on ${network}`, retryable: false };
    const address = sandboxTransactionAddress(network, request.transactionId);
    const balance = await this.balanceAt(network, address, request.asset);
    if (balance.units <= 0n) return { status: 'nothing_to_sweep' };
    const onChainId = onChainIdFrom(network, createHash('sha512').update(`sandbox-sweep:${network}:${request.idempotencyKey}`).digest());
    const first = await this.options.store.putIfAbsent(sandboxChainCollection, sweepId, { onChainId });
    if (first.status === 'exists') return { status: 'confirmed', onChainId: String(first.doc.onChainId) };
    const transfer: SandboxTransfer = {
      kind: 'sweep',
      network,
      onChainId,
      asset: request.asset,
      amount: balance,
      sender: address,
      destination: setup.depositAddress,
      memo: null,
      succeeded: true,
      atMs: this.options.clock.nowMs(),
    };
    await this.options.store.put(sandboxChainCollection, `tx:${network}:${onChainId}`, transferDoc(transfer));
    await this.appendToAddress(network, address, onChainId);
    return { status: 'confirmed', onChainId };
  }

  /** The PerTransactionDeposits port of a sandbox Solana or Celo network. */
  perTransaction(network: 'SOLANA' | 'CELO'): PerTransactionDeposits {
    this.setupOf(network);
    return {
      network,
      addressFor: (transactionId) => sandboxTransactionAddress(network, transactionId),
      verifyInto: (onChainId, address) => this.verifyInto(network, onChainId, address),
      transfersInto: (address, limit) => this.transfersInto(network, address, limit),
      sweep: (request) => this.sweep(network, request),
    };
  }

  /** Sends at most once per idempotency key; the hash is derived from the key. */
  async send(request: SendRequest): Promise<SendResult> {
    const setup = this.setupOf(request.network);
    const knobs = await this.knobs(request.network);
    if (knobs.sendOutage) return { status: 'failed', reason: 'sandbox send outage', retryable: true };
    const keyHash = createHash('sha256').update(request.idempotencyKey).digest('hex');
    const sendId = `send:${request.network}:${keyHash}`;
    const existing = await this.options.store.get(sandboxChainCollection, sendId);
    if (existing === null) {
      if (knobs.sendRejects) return { status: 'failed', reason: 'sandbox send rejected (knob)', retryable: false };
      const asset = setup.assets[request.asset];
      if (asset === undefined) return { status: 'failed', reason: `${request.asset} has no token on ${request.network}`, retryable: false };
      if (request.amount.units <= 0n || request.amount.scale > asset.decimals) {
        return { status: 'failed', reason: `the amount must be positive with at most ${asset.decimals} decimals`, retryable: false };
      }
      if (!isAddressOf(request.network, request.destination)) {
        return { status: 'failed', reason: 'the destination is not an address of this network', retryable: false };
      }
    }
    const digest = createHash('sha512').update(`sandbox-send:${request.network}:${request.idempotencyKey}`).digest();
    const onChainId = onChainIdFrom(request.network, digest);
    const fingerprint = `${request.asset}|${toFixedString(request.amount)}|${request.destination}`;
    const first = await this.options.store.putIfAbsent(sandboxChainCollection, sendId, {
      onChainId,
      fingerprint,
      polls: 0,
      pendingPolls: knobs.sendPendingPolls,
    });
    const record = first.status === 'inserted' ? { fingerprint, polls: 0, pendingPolls: knobs.sendPendingPolls } : first.doc;
    if (record.fingerprint !== fingerprint) {
      return { status: 'failed', reason: 'the idempotency key was used for another request', retryable: false };
    }
    if (first.status === 'inserted') {
      const transfer: SandboxTransfer = {
        kind: 'send',
        network: request.network,
        onChainId,
        asset: request.asset,
        amount: request.amount,
        sender: setup.depositAddress,
        destination: request.destination,
        memo: request.network === 'STELLAR' ? (request.memo ?? null) : null,
        succeeded: true,
        atMs: this.options.clock.nowMs(),
      };
      await this.options.store.put(sandboxChainCollection, `tx:${request.network}:${onChainId}`, transferDoc(transfer));
    }
    const polls = Number(record.polls) + 1;
    await this.options.store.put(sandboxChainCollection, sendId, { onChainId, fingerprint, polls, pendingPolls: Number(record.pendingPolls) });
    return polls > Number(record.pendingPolls) ? { status: 'confirmed', onChainId } : { status: 'pending', onChainId };
  }

  /** Records what is at `address` (a token account, a program, a contract) on the sandbox `network`. */
  async registerAccount(network: Network, address: string, kind: Exclude<AccountKind, 'wallet'>): Promise<void> {
    if (!isAddressOf(network, address)) throw new Error(`not an address of ${network}`);
    await this.options.store.put(sandboxChainCollection, accountDocId(network, address), { kind });
  }

  /** What is at `address`, from the ledger (see the header); throws under the lookup outage knob. */
  async accountKind(network: Network, address: string): Promise<AccountKind> {
    if ((await this.knobs(network)).lookupOutage) throw new Error(`sandbox ${network}: the node is unreachable (lookup outage knob)`);
    const setup = this.setups.get(network);
    const isToken = Object.values(setup?.assets ?? {}).some((asset) => asset !== undefined && sameAddress(network, asset.identifier, address));
    if (isToken && network !== 'STELLAR') return network === 'SOLANA' ? 'token_account' : 'contract';
    const doc = await this.options.store.get(sandboxChainCollection, accountDocId(network, address));
    const kind = doc?.['kind'];
    return kind === 'token_account' || kind === 'program' || kind === 'contract' ? kind : 'wallet';
  }

  accounts(network: Network): AccountLookup {
    this.setupOf(network);
    return { network, accountKind: (address) => this.accountKind(network, address) };
  }

  adapter(network: Network): ChainAdapter {
    this.setupOf(network);
    return {
      network,
      verify: (onChainId) => this.verify(network, onChainId),
      send: (request) => (request.network === network ? this.send(request) : Promise.resolve({ status: 'failed', reason: `this adapter sends on ${network}`, retryable: false })),
    };
  }

  watcher(network: Network, options: { readonly pollMs?: number; readonly retryDelayMsMax?: number } = {}): TransferWatcher {
    this.setupOf(network);
    const feed: SandboxFeed = {
      network,
      watcherOutage: async () => (await this.knobs(network)).watcherOutage,
      next: async (cursor) => {
        const next = await this.nextInFeed(network, cursor);
        return next === null ? null : { seq: next.seq, transfer: observed(next.transfer) };
      },
      cursor: () => this.cursor(network),
      saveCursor: (seq) => this.saveCursor(network, seq),
    };
    return new SandboxTransferWatcher(feed, options.pollMs ?? 200, options.retryDelayMsMax ?? 5_000, this.options.clock);
  }
}

/** EVM addresses compare without case (checksummed or not); others exactly. */
function sameAddress(network: Network, a: string, b: string): boolean {
  return network === 'CELO' ? a.toLowerCase() === b.toLowerCase() : a === b;
}

function accountDocId(network: Network, address: string): string {
  return `account:${network}:${network === 'CELO' ? address.toLowerCase() : address}`;
}

function observed(transfer: SandboxTransfer): ObservedTransfer {
  return {
    network: transfer.network,
    onChainId: transfer.onChainId,
    asset: transfer.asset,
    amount: transfer.amount,
    sender: transfer.sender,
    memo: transfer.memo,
    observedAtMs: transfer.atMs,
  };
}
