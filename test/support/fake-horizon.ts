// A local Horizon for tests: an HTTP server on 127.0.0.1 that answers in Horizon's documented JSON
// (HAL pages, problem+json errors) and streams with server-sent events, over a tiny in-memory
// ledger. Transactions reach it the real way: the SDK builds and signs them and POSTs the XDR to
// /transactions; the fake decodes them with the SDK, checks source account, signature, time bounds,
// sequence number and fee like Stellar Core does, then "applies" the payment operations.
//
// Simplifications (documented, not hidden): no balances or trustlines (a payment to an existing
// account succeeds unless a failure is scripted with `failNext`); path payments deliver exactly
// `destAmount` (strict receive) or `destMin` (strict send); one transaction per ledger; the result
// XDR of a successful transaction reports `paymentSuccess` for every operation.
//
// Routes: GET /, /accounts/{id}, /accounts/{id}/payments (cursor/order/limit; SSE with
// `Accept: text/event-stream`), /transactions/{hash}, /transactions/{hash}/payments,
// POST /transactions (form field `tx`).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Horizon, Keypair, Memo, Networks, TransactionBuilder, Account, xdr, type Transaction, type FeeBumpTransaction } from '@stellar/stellar-sdk';

const requestBodyBytesMax = 256 * 1024;
const pageLimitMax = 200;

export type SubmitScript =
  /** Apply the transaction, then answer 504 (Horizon's submission timeout): it IS on the ledger. */
  | { readonly kind: 'timeout_after_apply' }
  /** Drop the connection before the transaction reaches the ledger (never applied). */
  | { readonly kind: 'drop_before_apply' }
  /** Include the transaction as failed with this operation code (sequence consumed, nothing paid). */
  | { readonly kind: 'fail_on_chain'; readonly operationCode: 'op_underfunded' | 'op_no_trust' };

export interface SubmissionLogEntry {
  readonly hash: string | null;
  /** applied (200), failed_on_chain, rejected (400 before the ledger), duplicate (already on the ledger), dropped, timeout. */
  readonly outcome: 'applied' | 'failed_on_chain' | 'rejected' | 'duplicate' | 'dropped' | 'timeout';
  readonly code: string | null;
}

interface FakeAccount {
  readonly id: string;
  sequence: bigint;
  memoRequired: boolean;
}

interface AssetFields {
  readonly asset_type: string;
  readonly asset_code?: string;
  readonly asset_issuer?: string;
}

interface OperationRow {
  readonly id: bigint;
  readonly txHash: string;
  readonly successful: boolean;
  readonly createdAt: string;
  /** Accounts whose /payments list this operation appears in. */
  readonly accounts: readonly string[];
  readonly fields: Record<string, unknown>;
}

interface TransactionRow {
  readonly hash: string;
  readonly ledger: number;
  readonly createdAt: string;
  readonly successful: boolean;
  readonly source: string;
  readonly sequence: bigint;
  readonly envelopeXdr: string;
  readonly resultXdr: string;
  readonly memoType: string;
  readonly memo: string | null;
  readonly operationCount: number;
  readonly fee: string;
  readonly pagingToken: string;
  readonly validBefore: string | null;
}

interface StreamClient {
  readonly account: string;
  readonly response: ServerResponse;
  cursor: bigint;
}

export interface FakeHorizonOptions {
  readonly networkPassphrase?: string;
  /** The chain's clock (time bounds, created_at). Default: Date.now. */
  readonly nowMs?: () => number;
}

function assetFields(asset: { isNative(): boolean; getCode(): string; getIssuer(): string; getAssetType(): string }, prefix = ''): AssetFields {
  if (asset.isNative()) return { [`${prefix}asset_type`]: 'native' } as unknown as AssetFields;
  return {
    [`${prefix}asset_type`]: asset.getAssetType(),
    [`${prefix}asset_code`]: asset.getCode(),
    [`${prefix}asset_issuer`]: asset.getIssuer(),
  } as unknown as AssetFields;
}

function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

const operationResultCodes: Record<'op_underfunded' | 'op_no_trust' | 'op_no_destination', () => xdr.PaymentResult> = {
  op_underfunded: () => xdr.PaymentResult.paymentUnderfunded(),
  op_no_trust: () => xdr.PaymentResult.paymentNoTrust(),
  op_no_destination: () => xdr.PaymentResult.paymentNoDestination(),
};

function resultXdr(operations: number, failure: keyof typeof operationResultCodes | null): string {
  const results = Array.from({ length: operations }, () =>
    xdr.OperationResult.opInner(xdr.OperationResultTr.payment(failure === null ? xdr.PaymentResult.paymentSuccess() : operationResultCodes[failure]())),
  );
  return new xdr.TransactionResult({
    feeCharged: xdr.Int64.fromString(String(100 * operations)),
    result: failure === null ? xdr.TransactionResultResult.txSuccess(results) : xdr.TransactionResultResult.txFailed(results),
    ext: new xdr.TransactionResultExt(0),
  }).toXDR('base64');
}

export class FakeHorizon {
  readonly networkPassphrase: string;
  readonly submissions: SubmissionLogEntry[] = [];
  private readonly nowMs: () => number;
  private readonly accounts = new Map<string, FakeAccount>();
  private readonly operations: OperationRow[] = [];
  private readonly transactions = new Map<string, TransactionRow>();
  private readonly streams = new Set<StreamClient>();
  private readonly sockets = new Set<Socket>();
  private readonly scripts: SubmitScript[] = [];
  private ledger = 1_000;
  private down = false;
  private streamsFrozen = false;
  private laggingLookups: ReadonlySet<string> = new Set();
  private server: Server;
  private port = 0;

  private constructor(options: FakeHorizonOptions) {
    this.networkPassphrase = options.networkPassphrase ?? Networks.TESTNET;
    this.nowMs = options.nowMs ?? (() => Date.now());
    this.server = createServer((request, response) => {
      this.route(request, response).catch((error: unknown) => {
        if (!response.headersSent) this.problem(response, 500, 'server_error', 'Internal Server Error', String(error));
        else response.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(options: FakeHorizonOptions = {}): Promise<FakeHorizon> {
    const fake = new FakeHorizon(options);
    await new Promise<void>((resolve, reject) => {
      fake.server.once('error', reject);
      fake.server.listen(0, '127.0.0.1', () => resolve());
    });
    fake.port = (fake.server.address() as AddressInfo).port;
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.response.destroy();
    this.streams.clear();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- test controls ----

  /** Creates an account as if funded in a past ledger (Stellar starts its sequence at ledger << 32). */
  createAccount(id: string, options: { readonly memoRequired?: boolean } = {}): void {
    this.ledger += 1;
    this.accounts.set(id, { id, sequence: BigInt(this.ledger) << 32n, memoRequired: options.memoRequired ?? false });
  }

  sequenceOf(id: string): bigint {
    const account = this.accounts.get(id);
    if (account === undefined) throw new Error(`fake horizon: no account ${id}`);
    return account.sequence;
  }

  /** Scripts the outcome of the next submissions, in order. */
  scriptSubmissions(...scripts: SubmitScript[]): void {
    this.scripts.push(...scripts);
  }

  /** Cuts every open payments stream (the client sees the connection drop). */
  dropStreams(): number {
    const count = this.streams.size;
    for (const stream of this.streams) stream.response.destroy();
    this.streams.clear();
    return count;
  }

  /** Frozen streams stay open but receive nothing (a silently stuck connection). */
  setStreamsFrozen(frozen: boolean): void {
    this.streamsFrozen = frozen;
  }

  openStreams(): number {
    return this.streams.size;
  }

  /** While down, every connection is reset (an outage); streams are cut. */
  setDown(down: boolean): void {
    this.down = down;
    if (down) {
      this.dropStreams();
      for (const socket of this.sockets) socket.destroy();
    }
  }

  /**
   * Plays a Horizon behind a load balancer whose transaction lookups reach a node that lags: while
   * set, `GET /transactions/{hash}` answers 404 for these hashes although they are in a ledger
   * (and the accounts, served by a node ahead, show their sequence numbers consumed).
   */
  setLaggingLookups(hashes: readonly string[]): void {
    this.laggingLookups = new Set(hashes);
  }

  hasTransaction(hash: string): boolean {
    return this.transactions.has(hash);
  }

  /** Successful payment-type operations credited to `account` (what actually moved). */
  creditsTo(account: string): Record<string, unknown>[] {
    return this.operations.filter((row) => row.successful && row.fields.to === account).map((row) => row.fields);
  }

  /**
   * Builds, signs (SDK) and submits over HTTP a transaction from `source` with `operations`; the
   * sequence number is the account's next. Returns the hash (throws if Horizon rejected it).
   */
  async submitOperations(source: Keypair, operations: readonly xdr.Operation[], memo?: string): Promise<string> {
    const account = new Account(source.publicKey(), this.sequenceOf(source.publicKey()).toString());
    let builder = new TransactionBuilder(account, { fee: '100', networkPassphrase: this.networkPassphrase }).setTimeout(300);
    for (const operation of operations) builder = builder.addOperation(operation);
    if (memo !== undefined) builder = builder.addMemo(Memo.text(memo));
    const transaction = builder.build();
    transaction.sign(source);
    const server = new Horizon.Server(this.url, { allowHttp: true });
    const response = await server.submitTransaction(transaction, { skipMemoRequiredCheck: true });
    return response.hash;
  }

  // ---- HTTP ----

  private async route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.down) {
      request.socket.destroy();
      return;
    }
    const url = new URL(request.url ?? '/', this.url);
    const parts = url.pathname.split('/').filter((part) => part !== '');
    if (request.method === 'POST' && parts.length === 1 && parts[0] === 'transactions') return this.submit(request, response);
    if (request.method !== 'GET') return this.problem(response, 405, 'method_not_allowed', 'Method Not Allowed', '');
    if (parts.length === 0) return this.json(response, 200, this.root());
    const [collection, id, sub] = parts;
    if (collection === 'accounts' && id !== undefined && sub === undefined) {
      const account = this.accounts.get(id);
      return account === undefined ? this.notFound(response) : this.json(response, 200, this.accountJson(account));
    }
    if (collection === 'accounts' && id !== undefined && sub === 'payments' && parts.length === 3) {
      if ((request.headers.accept ?? '').includes('text/event-stream')) return this.stream(request, response, id, url);
      return this.page(response, url, (row) => row.accounts.includes(id), `/accounts/${id}/payments`);
    }
    if (collection === 'transactions' && id !== undefined && sub === undefined) {
      if (this.laggingLookups.has(id)) return this.notFound(response);
      const transaction = this.transactions.get(id);
      return transaction === undefined ? this.notFound(response) : this.json(response, 200, this.transactionJson(transaction));
    }
    if (collection === 'transactions' && id !== undefined && sub === 'payments' && parts.length === 3) {
      if (!this.transactions.has(id)) return this.notFound(response);
      return this.page(response, url, (row) => row.txHash === id, `/transactions/${id}/payments`, true);
    }
    return this.notFound(response);
  }

  private json(response: ServerResponse, status: number, body: unknown, contentType = 'application/hal+json; charset=utf-8'): void {
    const text = JSON.stringify(body);
    response.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
    response.end(text);
  }

  private problem(response: ServerResponse, status: number, type: string, title: string, detail: string, extras?: Record<string, unknown>): void {
    const body = { type: `https://stellar.org/horizon-errors/${type}`, title, status, detail, ...(extras === undefined ? {} : { extras }) };
    this.json(response, status, body, 'application/problem+json; charset=utf-8');
  }

  private notFound(response: ServerResponse): void {
    this.problem(response, 404, 'not_found', 'Resource Missing', 'The resource at the url requested was not found.');
  }

  private root(): Record<string, unknown> {
    return {
      _links: { self: { href: `${this.url}/` } },
      horizon_version: 'fake',
      core_version: 'fake',
      history_latest_ledger: this.ledger,
      core_latest_ledger: this.ledger,
      network_passphrase: this.networkPassphrase,
      current_protocol_version: 22,
      supported_protocol_version: 22,
      core_supported_protocol_version: 22,
    };
  }

  private accountJson(account: FakeAccount): Record<string, unknown> {
    const base = `${this.url}/accounts/${account.id}`;
    return {
      _links: {
        self: { href: base },
        transactions: { href: `${base}/transactions{?cursor,limit,order}`, templated: true },
        operations: { href: `${base}/operations{?cursor,limit,order}`, templated: true },
        payments: { href: `${base}/payments{?cursor,limit,order}`, templated: true },
        effects: { href: `${base}/effects{?cursor,limit,order}`, templated: true },
        offers: { href: `${base}/offers{?cursor,limit,order}`, templated: true },
        trades: { href: `${base}/trades{?cursor,limit,order}`, templated: true },
        data: { href: `${base}/data/{key}`, templated: true },
      },
      id: account.id,
      account_id: account.id,
      sequence: account.sequence.toString(),
      subentry_count: 0,
      last_modified_ledger: this.ledger,
      last_modified_time: iso(this.nowMs()),
      thresholds: { low_threshold: 0, med_threshold: 0, high_threshold: 0 },
      flags: { auth_required: false, auth_revocable: false, auth_immutable: false, auth_clawback_enabled: false },
      balances: [{ balance: '10000.0000000', buying_liabilities: '0.0000000', selling_liabilities: '0.0000000', asset_type: 'native' }],
      signers: [{ weight: 1, key: account.id, type: 'ed25519_public_key' }],
      data: account.memoRequired ? { 'config.memo_required': 'MQ==' } : {},
      num_sponsoring: 0,
      num_sponsored: 0,
      paging_token: account.id,
    };
  }

  private operationJson(row: OperationRow): Record<string, unknown> {
    const id = row.id.toString();
    return {
      _links: {
        self: { href: `${this.url}/operations/${id}` },
        transaction: { href: `${this.url}/transactions/${row.txHash}` },
        effects: { href: `${this.url}/operations/${id}/effects` },
        succeeds: { href: `${this.url}/effects?order=desc&cursor=${id}` },
        precedes: { href: `${this.url}/effects?order=asc&cursor=${id}` },
      },
      id,
      paging_token: id,
      transaction_successful: row.successful,
      created_at: row.createdAt,
      transaction_hash: row.txHash,
      ...row.fields,
    };
  }

  private transactionJson(row: TransactionRow): Record<string, unknown> {
    const base = `${this.url}/transactions/${row.hash}`;
    return {
      _links: {
        self: { href: base },
        account: { href: `${this.url}/accounts/${row.source}` },
        ledger: { href: `${this.url}/ledgers/${row.ledger}` },
        operations: { href: `${base}/operations{?cursor,limit,order}`, templated: true },
        effects: { href: `${base}/effects{?cursor,limit,order}`, templated: true },
        precedes: { href: `${this.url}/transactions?order=asc&cursor=${row.pagingToken}` },
        succeeds: { href: `${this.url}/transactions?order=desc&cursor=${row.pagingToken}` },
        transaction: { href: base },
      },
      id: row.hash,
      paging_token: row.pagingToken,
      successful: row.successful,
      hash: row.hash,
      ledger: row.ledger,
      created_at: row.createdAt,
      source_account: row.source,
      source_account_sequence: row.sequence.toString(),
      fee_account: row.source,
      fee_charged: row.fee,
      max_fee: row.fee,
      operation_count: row.operationCount,
      envelope_xdr: row.envelopeXdr,
      result_xdr: row.resultXdr,
      result_meta_xdr: '',
      fee_meta_xdr: '',
      memo_type: row.memoType,
      ...(row.memo === null ? {} : { memo: row.memo, memo_bytes: Buffer.from(row.memo, 'utf8').toString('base64') }),
      signatures: [],
      ...(row.validBefore === null ? {} : { valid_after: '1970-01-01T00:00:00Z', valid_before: row.validBefore }),
    };
  }

  private page(response: ServerResponse, url: URL, include: (row: OperationRow) => boolean, path: string, all = false): void {
    const order = url.searchParams.get('order') === 'desc' ? 'desc' : 'asc';
    const limitText = url.searchParams.get('limit');
    const limit = limitText === null ? 10 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > pageLimitMax) {
      return this.problem(response, 400, 'bad_request', 'Bad Request', 'limit must be 1..200', { invalid_field: 'limit' });
    }
    const cursorText = url.searchParams.get('cursor');
    if (cursorText !== null && cursorText !== 'now' && !/^\d{1,20}$/.test(cursorText)) {
      return this.problem(response, 400, 'bad_request', 'Bad Request', 'invalid cursor', { invalid_field: 'cursor' });
    }
    const cursor = cursorText === null ? null : cursorText === 'now' ? this.latestId() : BigInt(cursorText);
    let rows = this.operations.filter((row) => include(row) && (all || row.successful));
    if (order === 'desc') rows = [...rows].reverse();
    if (cursor !== null) rows = rows.filter((row) => (order === 'asc' ? row.id > cursor : row.id < cursor));
    const records = rows.slice(0, limit).map((row) => this.operationJson(row));
    const last = records.at(-1)?.paging_token ?? cursorText ?? '';
    const first = records[0]?.paging_token ?? cursorText ?? '';
    const link = (c: string, o: string): { href: string } => ({ href: `${this.url}${path}?cursor=${c}&limit=${limit}&order=${o}` });
    this.json(response, 200, {
      _links: { self: link(cursorText ?? '', order), next: link(String(last), order), prev: link(String(first), order === 'asc' ? 'desc' : 'asc') },
      _embedded: { records },
    });
  }

  private latestId(): bigint {
    return this.operations.at(-1)?.id ?? 0n;
  }

  private stream(request: IncomingMessage, response: ServerResponse, account: string, url: URL): void {
    const cursorText = url.searchParams.get('cursor') ?? request.headers['last-event-id']?.toString() ?? 'now';
    const cursor = cursorText === 'now' ? this.latestId() : /^\d{1,20}$/.test(cursorText) ? BigInt(cursorText) : null;
    if (cursor === null) return this.problem(response, 400, 'bad_request', 'Bad Request', 'invalid cursor', { invalid_field: 'cursor' });
    response.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    response.write('retry: 1000\nevent: open\ndata: "hello"\n\n');
    const client: StreamClient = { account, response, cursor };
    this.streams.add(client);
    response.on('close', () => this.streams.delete(client));
    for (const row of this.operations) this.push(client, row);
  }

  private push(client: StreamClient, row: OperationRow): void {
    if (this.streamsFrozen || !row.successful || !row.accounts.includes(client.account) || row.id <= client.cursor) return;
    client.cursor = row.id;
    client.response.write(`id: ${row.id}\ndata: ${JSON.stringify(this.operationJson(row))}\n\n`);
  }

  // ---- submission ----

  private async readBody(request: IncomingMessage): Promise<string | null> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of request) {
      const buffer = chunk as Buffer;
      bytes += buffer.length;
      if (bytes > requestBodyBytesMax) return null;
      chunks.push(buffer);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private reject(response: ServerResponse, hash: string | null, envelope: string, code: string): void {
    this.submissions.push({ hash, outcome: 'rejected', code });
    this.problem(response, 400, 'transaction_failed', 'Transaction Failed', 'The transaction failed when submitted to the stellar network.', {
      envelope_xdr: envelope,
      result_codes: { transaction: code },
    });
  }

  private async submit(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await this.readBody(request);
    if (body === null) return this.problem(response, 413, 'payload_too_large', 'Payload Too Large', '');
    const envelope = new URLSearchParams(body).get('tx') ?? '';
    let transaction: Transaction;
    try {
      const parsed: Transaction | FeeBumpTransaction = TransactionBuilder.fromXDR(envelope, this.networkPassphrase);
      if (!('sequence' in parsed)) return this.reject(response, null, envelope, 'tx_not_supported');
      transaction = parsed;
    } catch {
      return this.problem(response, 400, 'transaction_malformed', 'Transaction Malformed', 'Horizon could not decode the transaction envelope.');
    }
    const hash = transaction.hash().toString('hex');
    const known = this.transactions.get(hash);
    if (known !== undefined) {
      // Horizon answers a transaction already in its history with the recorded result.
      this.submissions.push({ hash, outcome: 'duplicate', code: known.successful ? null : 'tx_failed' });
      if (known.successful) return this.json(response, 200, this.transactionJson(known));
      return this.problem(response, 400, 'transaction_failed', 'Transaction Failed', 'The transaction failed when submitted to the stellar network.', {
        envelope_xdr: known.envelopeXdr,
        result_xdr: known.resultXdr,
        result_codes: { transaction: 'tx_failed' },
      });
    }
    const script = this.scripts.shift();
    if (script?.kind === 'drop_before_apply') {
      this.submissions.push({ hash, outcome: 'dropped', code: null });
      request.socket.destroy();
      return;
    }
    const source = this.accounts.get(transaction.source);
    if (source === undefined) return this.reject(response, hash, envelope, 'tx_no_account');
    const signer = Keypair.fromPublicKey(transaction.source);
    if (!transaction.signatures.some((signature) => signer.verify(transaction.hash(), signature.signature()))) {
      return this.reject(response, hash, envelope, 'tx_bad_auth');
    }
    const nowSeconds = Math.floor(this.nowMs() / 1000);
    const maxTime = Number(transaction.timeBounds?.maxTime ?? '0');
    const minTime = Number(transaction.timeBounds?.minTime ?? '0');
    if (maxTime !== 0 && nowSeconds > maxTime) return this.reject(response, hash, envelope, 'tx_too_late');
    if (minTime > nowSeconds) return this.reject(response, hash, envelope, 'tx_too_early');
    if (BigInt(transaction.sequence) !== source.sequence + 1n) return this.reject(response, hash, envelope, 'tx_bad_seq');
    if (Number(transaction.fee) < 100 * transaction.operations.length) return this.reject(response, hash, envelope, 'tx_insufficient_fee');

    const failure = this.failureOf(transaction, script);
    const row = this.apply(transaction, hash, envelope, failure);
    if (failure !== null) {
      this.submissions.push({ hash, outcome: 'failed_on_chain', code: failure });
      return this.problem(response, 400, 'transaction_failed', 'Transaction Failed', 'The transaction failed when submitted to the stellar network.', {
        envelope_xdr: envelope,
        result_xdr: row.resultXdr,
        result_codes: { transaction: 'tx_failed', operations: transaction.operations.map(() => failure) },
      });
    }
    if (script?.kind === 'timeout_after_apply') {
      this.submissions.push({ hash, outcome: 'timeout', code: null });
      return this.problem(response, 504, 'timeout', 'Timeout', 'Your request timed out before completing.');
    }
    this.submissions.push({ hash, outcome: 'applied', code: null });
    this.json(response, 200, {
      _links: { transaction: { href: `${this.url}/transactions/${hash}` } },
      hash,
      ledger: row.ledger,
      successful: true,
      envelope_xdr: envelope,
      result_xdr: row.resultXdr,
      result_meta_xdr: '',
    });
  }

  private failureOf(transaction: Transaction, script: SubmitScript | undefined): keyof typeof operationResultCodes | null {
    if (script?.kind === 'fail_on_chain') return script.operationCode;
    for (const operation of transaction.operations) {
      const destination = 'destination' in operation ? operation.destination : undefined;
      if (operation.type !== 'createAccount' && typeof destination === 'string' && !this.accounts.has(destination)) return 'op_no_destination';
    }
    return null;
  }

  /** Puts the transaction in a new ledger: the sequence number is consumed, successful or not. */
  private apply(transaction: Transaction, hash: string, envelope: string, failure: keyof typeof operationResultCodes | null): TransactionRow {
    const source = this.accounts.get(transaction.source);
    if (source === undefined) throw new Error('apply without source');
    source.sequence = BigInt(transaction.sequence);
    this.ledger += 1;
    const createdAt = iso(this.nowMs());
    const memoValue = transaction.memo.value;
    const memo = transaction.memo.type === 'text' && memoValue !== null ? Buffer.from(memoValue as Buffer | string).toString('utf8') : null;
    const maxTime = transaction.timeBounds?.maxTime;
    const row: TransactionRow = {
      hash,
      ledger: this.ledger,
      createdAt,
      successful: failure === null,
      source: transaction.source,
      sequence: BigInt(transaction.sequence),
      envelopeXdr: envelope,
      resultXdr: resultXdr(transaction.operations.length, failure),
      memoType: transaction.memo.type,
      memo,
      operationCount: transaction.operations.length,
      fee: transaction.fee,
      pagingToken: ((BigInt(this.ledger) << 32n) | (1n << 12n)).toString(),
      validBefore: maxTime === undefined || maxTime === '0' ? null : iso(Number(maxTime) * 1000),
    };
    this.transactions.set(hash, row);
    transaction.operations.forEach((operation, index) => {
      const fields = this.paymentFields(operation, transaction.source);
      if (fields === null) return;
      if (failure === null && operation.type === 'createAccount') this.accounts.set(operation.destination, { id: operation.destination, sequence: BigInt(this.ledger) << 32n, memoRequired: false });
      const accounts = [fields.from, fields.to, fields.funder, fields.account].filter((value): value is string => typeof value === 'string');
      const operationRow: OperationRow = {
        id: (BigInt(this.ledger) << 32n) | (1n << 12n) | BigInt(index + 1),
        txHash: hash,
        successful: failure === null,
        createdAt,
        accounts,
        fields,
      };
      this.operations.push(operationRow);
      for (const client of this.streams) this.push(client, operationRow);
    });
    return row;
  }

  /** Horizon's payment-record fields of an operation, or null for operations /payments does not list. */
  private paymentFields(operation: Transaction['operations'][number], transactionSource: string): Record<string, unknown> | null {
    const source = operation.source ?? transactionSource;
    switch (operation.type) {
      case 'payment':
        return { source_account: source, type: 'payment', type_i: 1, ...assetFields(operation.asset), from: source, to: operation.destination, amount: operation.amount };
      case 'pathPaymentStrictReceive':
        return {
          source_account: source,
          type: 'path_payment_strict_receive',
          type_i: 2,
          ...assetFields(operation.destAsset),
          from: source,
          to: operation.destination,
          amount: operation.destAmount,
          path: operation.path.map((asset) => assetFields(asset)),
          source_amount: operation.sendMax,
          source_max: operation.sendMax,
          ...assetFields(operation.sendAsset, 'source_'),
        };
      case 'pathPaymentStrictSend':
        return {
          source_account: source,
          type: 'path_payment_strict_send',
          type_i: 13,
          ...assetFields(operation.destAsset),
          from: source,
          to: operation.destination,
          amount: operation.destMin,
          path: operation.path.map((asset) => assetFields(asset)),
          source_amount: operation.sendAmount,
          destination_min: operation.destMin,
          ...assetFields(operation.sendAsset, 'source_'),
        };
      case 'createAccount':
        return { source_account: source, type: 'create_account', type_i: 0, starting_balance: operation.startingBalance, funder: source, account: operation.destination };
      default:
        return null;
    }
  }
}
