// The Horizon calls the Stellar adapter makes, through @stellar/stellar-sdk's Horizon.Server, with
// every answer read by stellar-records.ts and every failure turned into a value the caller can
// decide on (not found, rejected with result codes, outcome unknown). Requests carry a timeout and
// a response size cap; plain http is accepted only for loopback hosts (tests, a local Horizon).
import { AccountRequiresMemoError, Horizon, NetworkError, NotFoundError, TransactionBuilder } from '@stellar/stellar-sdk';
import {
  horizonPageSizeMax,
  readPaymentRecord,
  readTransactionRecord,
  transactionOperationsMax,
  type PaymentRecord,
  type TransactionRecord,
} from './stellar-records.ts';

export const horizonRequestTimeoutMsDefault = 20_000;
/** Horizon pages are ≤ 200 records of ~1–3 KB; anything near this cap is not Horizon. */
export const horizonResponseBytesMax = 8 * 1024 * 1024;

export interface HorizonClientOptions {
  readonly horizonUrl: string;
  readonly networkPassphrase: string;
  readonly requestTimeoutMs?: number;
}

export type SubmitOutcome =
  /** Included in a closed ledger and successful: final on Stellar. */
  | { readonly kind: 'success'; readonly hash: string }
  /** Horizon/Core answered with result codes (tx_bad_seq, tx_failed + op codes, …). */
  | { readonly kind: 'rejected'; readonly transactionCode: string; readonly operationCodes: readonly string[] }
  /** SEP-29: the destination declares that payments to it need a memo, and ours has none. */
  | { readonly kind: 'memo_required' }
  /** Timeout, 5xx, connection lost: the transaction may or may not reach the ledger. */
  | { readonly kind: 'unknown'; readonly reason: string };

export type StreamHandlers = {
  readonly onRecord: (record: PaymentRecord) => void;
  readonly onError: (reason: string) => void;
};

function isLoopback(url: URL): boolean {
  return url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
}

function errorText(error: unknown): string {
  if (error instanceof NetworkError) {
    const response = error.getResponse();
    return `horizon ${response.status ?? 'error'}${response.statusText ? ` ${response.statusText}` : ''}`;
  }
  if (error instanceof Error) return error.message.slice(0, 200);
  const message = typeof error === 'object' && error !== null ? (error as { message?: unknown; status?: unknown }) : {};
  if (typeof message.message === 'string' && message.message !== '') return message.message.slice(0, 200);
  if (typeof message.status === 'number') return `stream answered ${message.status}`;
  return 'stream error';
}

export { errorText as horizonErrorText };

/** The HTTP status and body of a failed request: the SDK's NetworkError, or the raw axios error submitTransaction rejects with. */
function httpFailure(error: unknown): { status: number; data: unknown } | null {
  if (error instanceof NetworkError) {
    const response = error.getResponse();
    return typeof response.status === 'number' ? { status: response.status, data: response.data } : null;
  }
  const response = typeof error === 'object' && error !== null ? (error as { response?: unknown }).response : undefined;
  const status = typeof response === 'object' && response !== null ? (response as { status?: unknown }).status : undefined;
  if (typeof status !== 'number') return null;
  return { status, data: (response as { data?: unknown }).data };
}

function resultCodes(data: unknown): { transactionCode: string; operationCodes: string[] } {
  const extras = typeof data === 'object' && data !== null ? (data as { extras?: unknown }).extras : undefined;
  const codes = typeof extras === 'object' && extras !== null ? (extras as { result_codes?: unknown }).result_codes : undefined;
  const record = typeof codes === 'object' && codes !== null ? (codes as { transaction?: unknown; operations?: unknown }) : {};
  const transactionCode = typeof record.transaction === 'string' ? record.transaction : 'bad_request';
  const operationCodes = Array.isArray(record.operations) ? record.operations.filter((code): code is string => typeof code === 'string') : [];
  return { transactionCode, operationCodes };
}

export class HorizonClient {
  readonly server: Horizon.Server;
  readonly networkPassphrase: string;

  constructor(options: HorizonClientOptions) {
    const url = new URL(options.horizonUrl);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) {
      throw new Error('horizonUrl must be https (plain http only on loopback)');
    }
    this.server = new Horizon.Server(options.horizonUrl, { allowHttp: url.protocol === 'http:' });
    this.server.httpClient.defaults.timeout = options.requestTimeoutMs ?? horizonRequestTimeoutMsDefault;
    this.server.httpClient.defaults.maxContentLength = horizonResponseBytesMax;
    this.server.httpClient.defaults.maxRedirects = 0;
    this.networkPassphrase = options.networkPassphrase;
  }

  /** The transaction, or null when Horizon does not know the hash (yet). */
  async transaction(hash: string): Promise<TransactionRecord | null> {
    try {
      const record = readTransactionRecord(await this.server.transactions().transaction(hash).call());
      if (record === null) throw new Error(`horizon sent a malformed transaction record for ${hash}`);
      return record;
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
  }

  /** Every payment-type operation of a transaction (one page: a transaction has ≤ 100 operations). */
  async transactionPayments(hash: string): Promise<PaymentRecord[]> {
    const page = await this.server.payments().forTransaction(hash).limit(transactionOperationsMax).order('asc').call();
    return readRecords(page.records);
  }

  /** One page of an account's payments after `cursor` (null: from the account's first). */
  async accountPayments(account: string, cursor: string | null, limit = horizonPageSizeMax): Promise<PaymentRecord[]> {
    let builder = this.server.payments().forAccount(account).order('asc').limit(Math.min(limit, horizonPageSizeMax));
    if (cursor !== null) builder = builder.cursor(cursor);
    return readRecords((await builder.call()).records);
  }

  /** The account's newest payment record (the health probe and the 'now' start cursor). */
  async latestPayment(account: string): Promise<PaymentRecord | null> {
    try {
      const page = await this.server.payments().forAccount(account).order('desc').limit(1).call();
      return readRecords(page.records)[0] ?? null;
    } catch (error) {
      if (error instanceof NotFoundError) return null; // an account that does not exist has no payments
      throw error;
    }
  }

  /** The account's current sequence number, or null when the account does not exist. */
  async accountSequence(account: string): Promise<bigint | null> {
    try {
      const sequence: unknown = (await this.server.accounts().accountId(account).call()).sequence;
      if (typeof sequence !== 'string' || !/^\d{1,20}$/.test(sequence)) throw new Error('horizon sent a malformed account record');
      return BigInt(sequence);
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
  }

  /** Submits a signed envelope (synchronous Horizon submission: 200 means in a closed ledger). */
  async submit(envelopeXdr: string): Promise<SubmitOutcome> {
    const transaction = TransactionBuilder.fromXDR(envelopeXdr, this.networkPassphrase);
    try {
      const response = await this.server.submitTransaction(transaction);
      if (response.successful === false) return { kind: 'rejected', transactionCode: 'tx_failed', operationCodes: [] };
      return { kind: 'success', hash: response.hash };
    } catch (error) {
      if (error instanceof AccountRequiresMemoError) return { kind: 'memo_required' };
      const failure = httpFailure(error);
      // 400 is Horizon's "Core rejected it or it failed in the ledger", with result codes; anything
      // else (504 timeout, 5xx, no answer) leaves the outcome open.
      if (failure?.status === 400) return { kind: 'rejected', ...resultCodes(failure.data) };
      return { kind: 'unknown', reason: failure === null ? errorText(error) : `horizon answered ${failure.status}` };
    }
  }

  /**
   * Server-sent events of an account's payments after `cursor`. The SDK recreates the connection
   * itself after `idleReconnectMs` without a message; any error is handed to `onError` and the
   * caller closes the stream (it owns reconnection and backoff).
   */
  streamPayments(account: string, cursor: string, handlers: StreamHandlers, idleReconnectMs: number): () => void {
    return this.server
      .payments()
      .forAccount(account)
      .cursor(cursor)
      .stream({
        onmessage: (value: unknown) => {
          const record = readPaymentRecord(value);
          if (record === null) handlers.onError('horizon streamed a malformed payment record');
          else handlers.onRecord(record);
        },
        onerror: (event: unknown) => handlers.onError(errorText(event)),
        reconnectTimeout: idleReconnectMs,
      });
  }
}

function readRecords(records: readonly unknown[]): PaymentRecord[] {
  return records.map((value) => {
    const record = readPaymentRecord(value);
    if (record === null) throw new Error('horizon sent a malformed payment record');
    return record;
  });
}
