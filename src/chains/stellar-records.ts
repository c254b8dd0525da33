// Reading Horizon's JSON: payment operation records and transaction records, validated field by
// field (Horizon is a remote system: nothing it sends is trusted to have a shape), exact amounts,
// and which payments are deposits of ours. No I/O here; stellar-horizon.ts fetches, this file reads.
import type { CryptoAsset } from '../domain/assets.ts';
import { add, decimal, type Decimal } from '../domain/money.ts';
import type { ObservedTransfer } from './chains.ts';

/** Stellar amounts are int64 stroops shown with exactly 7 decimals. */
export const stellarDecimals = 7;
/** A text memo holds at most 28 bytes. */
export const stellarMemoTextBytesMax = 28;
/** Horizon's page size limit. */
export const horizonPageSizeMax = 200;
/** A transaction has at most 100 operations, so one page of its payments is all of them. */
export const transactionOperationsMax = 100;

/** The operation types Horizon's /payments endpoints report; the last three never carry a token deposit. */
const depositOperationTypes = new Set(['payment', 'path_payment_strict_receive', 'path_payment_strict_send']);

/** One record of /accounts/{id}/payments or /transactions/{hash}/payments, the fields we use. */
export interface PaymentRecord {
  readonly id: string;
  /** Operation id as a decimal string: orders records globally; the resume cursor. */
  readonly pagingToken: string;
  readonly type: string;
  readonly transactionHash: string;
  /** Absent in old Horizon versions; Horizon omits failed transactions unless asked. */
  readonly transactionSuccessful: boolean;
  readonly createdAtMs: number | null;
  readonly from: string | null;
  readonly to: string | null;
  readonly assetType: string | null;
  readonly assetCode: string | null;
  readonly assetIssuer: string | null;
  /** The amount `to` received (for path payments: the destination amount), as Horizon wrote it. */
  readonly amountText: string | null;
}

export interface TransactionRecord {
  readonly hash: string;
  readonly successful: boolean;
  readonly ledger: number | null;
  readonly createdAtMs: number | null;
  readonly memoType: string;
  /** The text memo; null for any other memo type. */
  readonly memoText: string | null;
  /** Base64 TransactionResult XDR (to read the failure codes of a failed transaction). */
  readonly resultXdr: string | null;
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function text(value: unknown, name: string): string | null {
  const found = field(value, name);
  return typeof found === 'string' ? found : null;
}

function timeMs(value: unknown, name: string): number | null {
  const found = text(value, name);
  if (found === null) return null;
  const ms = Date.parse(found);
  return Number.isFinite(ms) ? ms : null;
}

const pagingTokenPattern = /^\d{1,20}$/;
const hashPattern = /^[0-9a-f]{64}$/;

/** A payment record, or null when a required field is missing or malformed. */
export function readPaymentRecord(value: unknown): PaymentRecord | null {
  const pagingToken = text(value, 'paging_token');
  const type = text(value, 'type');
  const transactionHash = text(value, 'transaction_hash');
  if (pagingToken === null || !pagingTokenPattern.test(pagingToken) || type === null) return null;
  if (transactionHash === null || !hashPattern.test(transactionHash)) return null;
  const successful = field(value, 'transaction_successful');
  return {
    id: text(value, 'id') ?? pagingToken,
    pagingToken,
    type,
    transactionHash,
    transactionSuccessful: successful !== false,
    createdAtMs: timeMs(value, 'created_at'),
    from: text(value, 'from'),
    to: text(value, 'to'),
    assetType: text(value, 'asset_type'),
    assetCode: text(value, 'asset_code'),
    assetIssuer: text(value, 'asset_issuer'),
    amountText: text(value, 'amount'),
  };
}

export function readTransactionRecord(value: unknown): TransactionRecord | null {
  const hash = text(value, 'hash');
  const successful = field(value, 'successful');
  if (hash === null || !hashPattern.test(hash) || typeof successful !== 'boolean') return null;
  const memoType = text(value, 'memo_type') ?? 'none';
  const ledger = field(value, 'ledger');
  return {
    hash,
    successful,
    ledger: typeof ledger === 'number' && Number.isSafeInteger(ledger) ? ledger : null,
    createdAtMs: timeMs(value, 'created_at'),
    memoType,
    memoText: memoType === 'text' ? text(value, 'memo') : null,
    resultXdr: text(value, 'result_xdr'),
  };
}

/** Compare paging tokens (decimal operation ids) numerically. */
export function comparePagingTokens(a: string, b: string): -1 | 0 | 1 {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function isPagingToken(value: string): boolean {
  return pagingTokenPattern.test(value);
}

const amountPattern = /^(\d{1,12})(?:\.(\d{1,7}))?$/;

/** Horizon's amount text ("25.5000000") as an exact decimal at 7 places; null if malformed. */
export function parseStellarAmount(amountText: string): Decimal | null {
  const match = amountPattern.exec(amountText);
  if (!match) return null;
  const [, integerPart = '0', fractionPart = ''] = match;
  const units = BigInt(integerPart) * 10n ** BigInt(stellarDecimals) + BigInt(fractionPart.padEnd(stellarDecimals, '0'));
  if (units > 2n ** 63n - 1n) return null;
  return decimal(units, stellarDecimals);
}

/** An exact amount as Stellar's amount text; null when it has more than 7 decimals or is not positive. */
export function formatStellarAmount(amount: Decimal): string | null {
  if (amount.units <= 0n) return null;
  let units = amount.units;
  let scale = amount.scale;
  while (scale > stellarDecimals) {
    if (units % 10n !== 0n) return null;
    units /= 10n;
    scale -= 1;
  }
  units *= 10n ** BigInt(stellarDecimals - scale);
  if (units > 2n ** 63n - 1n) return null;
  const digits = units.toString().padStart(stellarDecimals + 1, '0');
  return `${digits.slice(0, -stellarDecimals)}.${digits.slice(-stellarDecimals)}`;
}

/** The configured deposit assets: code → issuer (the active mint). */
export type StellarAssetIssuers = Readonly<Partial<Record<CryptoAsset, string>>>;

/** What a payment record means to us. */
export type PaymentClass =
  /** The configured asset (code AND issuer) into one of our accounts. */
  | { readonly kind: 'deposit'; readonly asset: CryptoAsset; readonly amount: Decimal; readonly sender: string; readonly account: string }
  /** Something else credited to our account: another asset, a look-alike issuer, native XLM. */
  | { readonly kind: 'unmatched'; readonly reason: string; readonly account: string }
  /** Not a credit to us (our own sends, create_account, account_merge, failed transactions). */
  | { readonly kind: 'other' };

export function classifyPayment(record: PaymentRecord, ourAccounts: ReadonlySet<string>, assets: StellarAssetIssuers): PaymentClass {
  if (!record.transactionSuccessful) return { kind: 'other' };
  if (!depositOperationTypes.has(record.type)) return { kind: 'other' };
  if (record.to === null || !ourAccounts.has(record.to)) return { kind: 'other' };
  const account = record.to;
  if (record.assetType === 'native') return { kind: 'unmatched', reason: 'native XLM is not a deposit asset', account };
  const code = record.assetCode;
  const configured = Object.entries(assets).find(([asset]) => asset === code) as [CryptoAsset, string] | undefined;
  if (configured === undefined) return { kind: 'unmatched', reason: `asset ${code ?? '(none)'} is not a deposit asset`, account };
  if (record.assetIssuer !== configured[1]) {
    return { kind: 'unmatched', reason: `asset ${configured[0]} from issuer ${record.assetIssuer ?? '(none)'} is not the configured mint`, account };
  }
  const amount = record.amountText === null ? null : parseStellarAmount(record.amountText);
  if (amount === null || amount.units <= 0n) return { kind: 'unmatched', reason: 'amount is missing or malformed', account };
  if (record.from === null) return { kind: 'unmatched', reason: 'sender is missing', account };
  return { kind: 'deposit', asset: configured[0], amount, sender: record.from, account };
}

/** A payment credited to us that is not a deposit: recorded for operations, never refunded automatically. */
export interface UnmatchedCredit {
  readonly record: PaymentRecord;
  readonly reason: string;
  readonly account: string;
}

export interface TransactionTransfers {
  /** One per deposit asset: the transaction's credits of it to our accounts, summed. */
  readonly transfers: ObservedTransfer[];
  readonly unmatched: UnmatchedCredit[];
  /** The largest paging token among the transaction's payments: every record of it is ≤ this. */
  readonly lastPagingToken: string | null;
}

/**
 * The deposits that one transaction makes to us. A transaction is one deposit per asset: several
 * payment operations of the same asset (to any of our accounts) are summed, and the sender is the
 * `from` of the first of them, because the core keys deposits by the transaction hash.
 */
export function transactionTransfers(
  transaction: TransactionRecord,
  payments: readonly PaymentRecord[],
  ourAccounts: ReadonlySet<string>,
  assets: StellarAssetIssuers,
): TransactionTransfers {
  const byAsset = new Map<CryptoAsset, { amount: Decimal; sender: string; atMs: number | null }>();
  const unmatched: UnmatchedCredit[] = [];
  let lastPagingToken: string | null = null;
  const ordered = [...payments].sort((a, b) => comparePagingTokens(a.pagingToken, b.pagingToken));
  for (const record of ordered) {
    if (record.transactionHash !== transaction.hash) continue;
    lastPagingToken = record.pagingToken;
    if (!transaction.successful) continue;
    const meaning = classifyPayment(record, ourAccounts, assets);
    if (meaning.kind === 'unmatched') unmatched.push({ record, reason: meaning.reason, account: meaning.account });
    if (meaning.kind !== 'deposit') continue;
    const seen = byAsset.get(meaning.asset);
    byAsset.set(meaning.asset, {
      amount: seen === undefined ? meaning.amount : add(seen.amount, meaning.amount),
      sender: seen?.sender ?? meaning.sender,
      atMs: seen?.atMs ?? record.createdAtMs,
    });
  }
  const transfers: ObservedTransfer[] = [];
  for (const [asset, credit] of byAsset) {
    transfers.push({
      network: 'STELLAR',
      onChainId: transaction.hash,
      asset,
      amount: credit.amount,
      sender: credit.sender,
      memo: transaction.memoText,
      observedAtMs: transaction.createdAtMs ?? credit.atMs ?? 0,
    });
  }
  return { transfers, unmatched, lastPagingToken };
}
