// The Stellar chain adapter (ChainAdapter + TransferWatcher over Horizon). See docs/stellar.md.
//
//   const { adapter, watcher } = createStellarChain({ config: chains.STELLAR, store, log, clock });
//   await watcher.start(onTransfer);            // deposits, in ledger order, cursor after each
//   await adapter.verify(hash);                 // ops reconcile of a Stellar hash
//   await adapter.send({ …, idempotencyKey });  // refunds and onramp deliveries, at most once per key
//
// The pieces: stellar-records.ts reads Horizon's JSON (pure), stellar-horizon.ts talks to Horizon,
// stellar-watcher.ts streams deposits, stellar-send.ts signs and submits once per key.
import { Keypair, Networks } from '@stellar/stellar-sdk';
import type { Logger } from 'pino';
import { isOneOf, cryptoAssets } from '../domain/assets.ts';
import { sendJournalOnStore, type ChainAdapter, type SendJournal, type SendRequest, type SendResult, type VerifyResult } from './chains.ts';
import { HorizonClient } from './stellar-horizon.ts';
import { stellarDecimals, transactionTransfers, type StellarAssetIssuers } from './stellar-records.ts';
import { StellarSender } from './stellar-send.ts';
import { StellarWatcher, type StellarWatcherOptions } from './stellar-watcher.ts';
import type { SnapshotStore } from '../store/store.ts';

export { StellarWatcher, type StellarAccountStatus, type StellarWatcherOptions } from './stellar-watcher.ts';
export { StellarSender } from './stellar-send.ts';
export { HorizonClient } from './stellar-horizon.ts';

/** The STELLAR entry of CHAINS_FILE (src/chains/config.ts validates it); structural, fields we read. */
export interface StellarConnectionConfig {
  readonly horizonUrl: string;
  readonly depositAddress: string;
  readonly assets: Readonly<Record<string, { readonly issuer: string; readonly decimals: number } | undefined>>;
  readonly signerSecretEnv: string;
}

export interface StellarChainOptions {
  readonly config: StellarConnectionConfig;
  /** Default: the public network ("Public Global Stellar Network ; September 2015"). */
  readonly networkPassphrase?: string;
  /** Deposit addresses rotated out: still watched (late deposits) and accepted by verify. */
  readonly previousDepositAddresses?: readonly string[];
  /** Where `config.signerSecretEnv` is looked up. Default: process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly store: Pick<SnapshotStore, 'get' | 'put' | 'putIfAbsent'>;
  readonly log: Logger;
  readonly clock: { nowMs(): number };
  readonly requestTimeoutMs?: number;
  /** Watcher tuning (start cursor, backoff, staleness); the accounts and assets come from config. */
  readonly watcher?: Omit<StellarWatcherOptions, 'horizon' | 'store' | 'accounts' | 'assets' | 'clock' | 'log'>;
  readonly send?: {
    readonly journal?: SendJournal;
    readonly feeStroops?: number;
    readonly validitySeconds?: number;
    readonly consumedSettleMs?: number;
    readonly afterRecord?: (idempotencyKey: string) => Promise<void>;
  };
}

export interface StellarChain {
  readonly adapter: StellarAdapter;
  readonly watcher: StellarWatcher;
}

function assetIssuers(config: StellarConnectionConfig): StellarAssetIssuers {
  const issuers: Partial<Record<(typeof cryptoAssets)[number], string>> = {};
  for (const [asset, setup] of Object.entries(config.assets)) {
    if (setup === undefined) continue;
    if (!isOneOf(cryptoAssets, asset)) throw new Error(`STELLAR.assets.${asset}: not a supported asset`);
    if (setup.decimals !== stellarDecimals) throw new Error(`STELLAR.assets.${asset}.decimals: Stellar amounts have exactly 7 decimals`);
    issuers[asset] = setup.issuer;
  }
  return issuers;
}

/** The hot wallet seed from the environment variable the config names (never logged, never echoed). */
function signerSecret(config: StellarConnectionConfig, env: Readonly<Record<string, string | undefined>>): string | null {
  const secret = env[config.signerSecretEnv];
  if (secret === undefined || secret === '') return null;
  try {
    Keypair.fromSecret(secret);
  } catch {
    throw new Error(`${config.signerSecretEnv} does not hold a valid Stellar secret seed`);
  }
  return secret;
}

export function createStellarChain(options: StellarChainOptions): StellarChain {
  const horizon = new HorizonClient({
    horizonUrl: options.config.horizonUrl,
    networkPassphrase: options.networkPassphrase ?? Networks.PUBLIC,
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
  });
  const assets = assetIssuers(options.config);
  const accounts = [options.config.depositAddress, ...(options.previousDepositAddresses ?? [])];
  const sender = new StellarSender({
    horizon,
    journal: options.send?.journal ?? sendJournalOnStore(options.store),
    assets,
    signerSecret: signerSecret(options.config, options.env ?? process.env),
    clock: options.clock,
    log: options.log,
    ...(options.send?.feeStroops === undefined ? {} : { feeStroops: options.send.feeStroops }),
    ...(options.send?.validitySeconds === undefined ? {} : { validitySeconds: options.send.validitySeconds }),
    ...(options.send?.consumedSettleMs === undefined ? {} : { consumedSettleMs: options.send.consumedSettleMs }),
    ...(options.send?.afterRecord === undefined ? {} : { afterRecord: options.send.afterRecord }),
  });
  const watcher = new StellarWatcher({ ...options.watcher, horizon, store: options.store, accounts, assets, clock: options.clock, log: options.log });
  return { adapter: new StellarAdapter(horizon, sender, new Set(accounts), assets), watcher };
}

export class StellarAdapter implements ChainAdapter {
  readonly network = 'STELLAR' as const;

  constructor(
    private readonly horizon: HorizonClient,
    private readonly sender: StellarSender,
    private readonly ourAccounts: ReadonlySet<string>,
    private readonly assets: StellarAssetIssuers,
  ) {}

  /** The transaction's credits of the configured assets to our deposit accounts. Network failures throw. */
  async verify(onChainId: string): Promise<VerifyResult> {
    const hash = onChainId.trim().toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(hash)) return { status: 'invalid', reason: 'a Stellar transaction hash is 64 hex digits' };
    const transaction = await this.horizon.transaction(hash);
    if (transaction === null) return { status: 'not_found', reason: 'Horizon does not know this transaction' };
    if (!transaction.successful) return { status: 'invalid', reason: 'the transaction failed on chain' };
    const payments = await this.horizon.transactionPayments(hash);
    const found = transactionTransfers(transaction, payments, this.ourAccounts, this.assets);
    if (found.transfers.length === 0) {
      const unmatched = found.unmatched[0];
      return { status: 'invalid', reason: unmatched === undefined ? 'the transaction pays nothing to our deposit address' : unmatched.reason };
    }
    return { status: 'found', transfers: found.transfers };
  }

  send(request: SendRequest): Promise<SendResult> {
    return this.sender.send(request);
  }

  /** The hot wallet's account id (null without a configured secret). */
  get hotWallet(): string | null {
    return this.sender.source;
  }
}
