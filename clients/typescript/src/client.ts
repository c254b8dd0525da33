// A typed client of the payouts and onramp API, thin over the types generated from the service's
// OpenAPI document (schema.ts, `npm run openapi` in the service repository). What it adds to
// fetch is what every partner otherwise re-implements, and gets wrong in the same places:
// - an Idempotency-Key on every POST (generated unless given) that stays the same on every retry
//   of that call, so a retry after a timeout replays the first answer instead of acting twice;
// - retries only when the service says a retry can succeed (`retryable: true` in the error body,
//   which covers 429, 503, 409 idempotency_in_progress and 500), or when the request never got an
//   answer; waiting the `Retry-After` the service asked for, else a capped exponential backoff;
//   bounded in attempts and in the longest wait it accepts;
// - errors as `PaymentsApiError` with the service's `code`, `reason`, `retryable` and request id.
import type { components, operations } from './schema.ts';

export type Schemas = components['schemas'];

/** Every code the API can answer with, typed from the document. */
export type ErrorCode = {
  [Name in keyof Schemas]: Name extends `Error${number}` ? (Schemas[Name] extends { code: infer Code } ? Code : never) : never;
}[keyof Schemas];

type JsonBody<Op extends keyof operations> = operations[Op] extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : never;
type SuccessOf<Responses> = Responses extends { 200: { content: { 'application/json': infer Body } } }
  ? Body
  : Responses extends { 201: { content: { 'application/json': infer Body } } }
    ? Body
    : Responses extends { 202: { content: { 'application/json': infer Body } } }
      ? Body
      : never;
export type Success<Op extends keyof operations> = SuccessOf<operations[Op]['responses']>;
type QueryOf<Op extends keyof operations> = operations[Op]['parameters'] extends { query?: infer Query } ? NonNullable<Query> : never;

/** The method and path of each operation (a test checks this table against the document). */
export const operationRoutes = {
  createQuote: ['POST', '/quote'],
  createReverseQuote: ['POST', '/quote/reverse'],
  createOnrampQuote: ['POST', '/quote/onramp'],
  acceptTransaction: ['POST', '/transaction'],
  getTransaction: ['GET', '/transaction/{id}'],
  getReceipt: ['GET', '/transaction/{id}/receipt'],
  getReceiptKeys: ['GET', '/.well-known/jwks.json'],
  listTransactions: ['GET', '/transactions/list'],
  listUnmatchedDeposits: ['GET', '/unmatched-deposits/list'],
  getUnmatchedDeposit: ['GET', '/unmatched-deposit/{id}'],
  refundUnmatchedDeposit: ['POST', '/unmatched-deposit/{id}/refund'],
  applyUnmatchedDeposit: ['POST', '/unmatched-deposit/{id}/apply'],
  notifyPayment: ['POST', '/payments/notify'],
  notifySolanaPayment: ['POST', '/solana/payments/notify'],
  notifyCeloPayment: ['POST', '/celo/payments/notify'],
  getLiquidity: ['GET', '/payments/liquidity'],
  decodeBrCode: ['GET', '/qr-decoder/br'],
  getKycStatus: ['GET', '/kyc/status'],
  submitKyc: ['POST', '/kyc'],
  listCorridors: ['GET', '/public/corridors'],
  getCorridorHealth: ['GET', '/public/corridors/health'],
  listEvents: ['GET', '/events'],
  reconcileHash: ['POST', '/ops/transactions/reconcile-hash'],
  sandboxDeposit: ['POST', '/sandbox/deposits'],
  sandboxPixPayment: ['POST', '/sandbox/pix-payments'],
  setSandboxWebhookFaults: ['PUT', '/sandbox/webhook-faults'],
  getSandboxWebhookFaults: ['GET', '/sandbox/webhook-faults'],
  resetSandboxWebhookFaults: ['DELETE', '/sandbox/webhook-faults'],
  sandboxExpire: ['POST', '/sandbox/transactions/{id}/expire'],
  sandboxFailNextPayout: ['POST', '/sandbox/transactions/{id}/fail-next-payout'],
  sandboxShortNextDeposit: ['POST', '/sandbox/transactions/{id}/short-next-deposit'],
  healthz: ['GET', '/healthz'],
  readyz: ['GET', '/readyz'],
} as const satisfies { readonly [Op in keyof operations]: readonly ['GET' | 'POST' | 'PUT' | 'DELETE', string] };

/** An answer that is not a success, as the service sent it. */
export class PaymentsApiError extends Error {
  override readonly name = 'PaymentsApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'unexpected_response',
    readonly reason: string,
    readonly retryable: boolean,
    /** The X-Request-Id of the answer: quote it to support. */
    readonly requestId: string | null,
    /** Seconds the service asked to wait (429, 503), or null. */
    readonly retryAfterSeconds: number | null,
    /** The whole body (e.g. the reconcile fields of a 400 `invalid`). */
    readonly body: unknown,
  ) {
    super(`${status} ${code}: ${reason}${requestId === null ? '' : ` (request ${requestId})`}`);
  }
}

/** The request never got an answer (connection refused, reset, timed out) after every attempt. */
export class PaymentsNetworkError extends Error {
  override readonly name = 'PaymentsNetworkError';
  constructor(readonly attempts: number, override readonly cause: unknown) {
    super(`no answer after ${attempts} attempt(s): ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

export interface RetryPolicy {
  /** Attempts per call, the first included (default 4). */
  readonly attemptsMax: number;
  /** First backoff when the service gave no Retry-After (default 250 ms), doubled per attempt. */
  readonly backoffMsMin: number;
  /** Longest backoff (default 5 s). */
  readonly backoffMsMax: number;
  /** A Retry-After longer than this is not waited for: the error is thrown (default 30 s). */
  readonly retryAfterMsMax: number;
}

export const defaultRetryPolicy: RetryPolicy = { attemptsMax: 4, backoffMsMin: 250, backoffMsMax: 5_000, retryAfterMsMax: 30_000 };

export interface ClientOptions {
  /** e.g. `https://api.example.com` (no trailing slash needed). */
  readonly baseUrl: string;
  /** The partner API key (sent as X-API-Key). */
  readonly apiKey?: string;
  /** The ops key, for `reconcileHash` only (sent as X-OPS-API-KEY). */
  readonly opsApiKey?: string;
  readonly retry?: Partial<RetryPolicy>;
  /** Per-attempt timeout (default 30 s). */
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
  /** Makes Idempotency-Keys (default: a random UUID). */
  readonly newIdempotencyKey?: () => string;
  /** How the client waits between attempts (tests inject their own). */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface CallOptions {
  /** Reuse a key you stored to retry a call across restarts; generated otherwise. */
  readonly idempotencyKey?: string;
  /** Your id for the request (1–128 of A–Z a–z 0–9 . _ : -). */
  readonly requestId?: string;
  readonly signal?: AbortSignal;
}

interface RawCall {
  readonly op: keyof typeof operationRoutes;
  readonly path?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly form?: FormData;
  readonly options?: CallOptions;
}

function retryAfterSecondsOf(headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (value === null || !/^\d{1,6}$/.test(value.trim())) return null;
  return Number(value.trim());
}

export class PaymentsClient {
  private readonly baseUrl: string;
  private readonly retry: RetryPolicy;
  private readonly fetchImpl: typeof fetch;
  private readonly newIdempotencyKey: () => string;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly timeoutMs: number;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.retry = { ...defaultRetryPolicy, ...options.retry };
    this.fetchImpl = options.fetch ?? fetch;
    this.newIdempotencyKey = options.newIdempotencyKey ?? (() => globalThis.crypto.randomUUID());
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  createQuote(body: JsonBody<'createQuote'>, options?: CallOptions): Promise<Success<'createQuote'>> {
    return this.call({ op: 'createQuote', body, ...(options === undefined ? {} : { options }) });
  }
  createReverseQuote(body: JsonBody<'createReverseQuote'>, options?: CallOptions): Promise<Success<'createReverseQuote'>> {
    return this.call({ op: 'createReverseQuote', body, ...(options === undefined ? {} : { options }) });
  }
  createOnrampQuote(body: JsonBody<'createOnrampQuote'>, options?: CallOptions): Promise<Success<'createOnrampQuote'>> {
    return this.call({ op: 'createOnrampQuote', body, ...(options === undefined ? {} : { options }) });
  }
  acceptTransaction(body: JsonBody<'acceptTransaction'>, options?: CallOptions): Promise<Success<'acceptTransaction'>> {
    return this.call({ op: 'acceptTransaction', body, ...(options === undefined ? {} : { options }) });
  }
  getTransaction(id: string, options?: CallOptions): Promise<Success<'getTransaction'>> {
    return this.call({ op: 'getTransaction', path: { id }, ...(options === undefined ? {} : { options }) });
  }
  /** The signed settlement receipt; check it with `verifyReceipt(receipt, await client.getReceiptKeys())`. */
  getReceipt(id: string, options?: CallOptions): Promise<Success<'getReceipt'>> {
    return this.call({ op: 'getReceipt', path: { id }, ...(options === undefined ? {} : { options }) });
  }
  getReceiptKeys(options?: CallOptions): Promise<Success<'getReceiptKeys'>> {
    return this.call({ op: 'getReceiptKeys', ...(options === undefined ? {} : { options }) });
  }
  listTransactions(query: QueryOf<'listTransactions'>, options?: CallOptions): Promise<Success<'listTransactions'>> {
    return this.call({ op: 'listTransactions', query, ...(options === undefined ? {} : { options }) });
  }
  /** Your unmatched deposits (docs/unmatched-deposits.md); every filter optional. */
  listUnmatchedDeposits(query: QueryOf<'listUnmatchedDeposits'> = {}, options?: CallOptions): Promise<Success<'listUnmatchedDeposits'>> {
    return this.call({ op: 'listUnmatchedDeposits', query, ...(options === undefined ? {} : { options }) });
  }
  getUnmatchedDeposit(id: string, options?: CallOptions): Promise<Success<'getUnmatchedDeposit'>> {
    return this.call({ op: 'getUnmatchedDeposit', path: { id }, ...(options === undefined ? {} : { options }) });
  }
  /** Refunds an open unmatched deposit to its sender (once, however often it is called). */
  refundUnmatchedDeposit(id: string, options?: CallOptions): Promise<Success<'refundUnmatchedDeposit'>> {
    return this.call({ op: 'refundUnmatchedDeposit', path: { id }, ...(options === undefined ? {} : { options }) });
  }
  /** Funds a new transaction from a fresh quote (the body of acceptTransaction) with an open unmatched deposit. */
  applyUnmatchedDeposit(id: string, body: JsonBody<'applyUnmatchedDeposit'>, options?: CallOptions): Promise<Success<'applyUnmatchedDeposit'>> {
    return this.call({ op: 'applyUnmatchedDeposit', path: { id }, body, ...(options === undefined ? {} : { options }) });
  }
  notifyPayment(body: JsonBody<'notifyPayment'>, options?: CallOptions): Promise<Success<'notifyPayment'>> {
    return this.call({ op: 'notifyPayment', body, ...(options === undefined ? {} : { options }) });
  }
  getLiquidity(query: QueryOf<'getLiquidity'>, options?: CallOptions): Promise<Success<'getLiquidity'>> {
    return this.call({ op: 'getLiquidity', query, ...(options === undefined ? {} : { options }) });
  }
  decodeBrCode(query: QueryOf<'decodeBrCode'>, options?: CallOptions): Promise<Success<'decodeBrCode'>> {
    return this.call({ op: 'decodeBrCode', query, ...(options === undefined ? {} : { options }) });
  }
  getKycStatus(query: QueryOf<'getKycStatus'>, options?: CallOptions): Promise<Success<'getKycStatus'>> {
    return this.call({ op: 'getKycStatus', query, ...(options === undefined ? {} : { options }) });
  }
  /** `form`: the spec's text fields and a `document` file part (multipart/form-data). */
  submitKyc(form: FormData, options?: CallOptions): Promise<Success<'submitKyc'>> {
    return this.call({ op: 'submitKyc', form, ...(options === undefined ? {} : { options }) });
  }
  listCorridors(options?: CallOptions): Promise<Success<'listCorridors'>> {
    return this.call({ op: 'listCorridors', ...(options === undefined ? {} : { options }) });
  }
  getCorridorHealth(options?: CallOptions): Promise<Success<'getCorridorHealth'>> {
    return this.call({ op: 'getCorridorHealth', ...(options === undefined ? {} : { options }) });
  }
  listEvents(query: QueryOf<'listEvents'> = {}, options?: CallOptions): Promise<Success<'listEvents'>> {
    return this.call({ op: 'listEvents', query, ...(options === undefined ? {} : { options }) });
  }
  reconcileHash(body: JsonBody<'reconcileHash'>, options?: CallOptions): Promise<Success<'reconcileHash'>> {
    return this.call({ op: 'reconcileHash', body, ...(options === undefined ? {} : { options }) });
  }
  sandboxDeposit(body: JsonBody<'sandboxDeposit'>, options?: CallOptions): Promise<Success<'sandboxDeposit'>> {
    return this.call({ op: 'sandboxDeposit', body, ...(options === undefined ? {} : { options }) });
  }
  sandboxPixPayment(body: JsonBody<'sandboxPixPayment'>, options?: CallOptions): Promise<Success<'sandboxPixPayment'>> {
    return this.call({ op: 'sandboxPixPayment', body, ...(options === undefined ? {} : { options }) });
  }
  /** Sandbox: the faults your webhook deliveries suffer from now on (docs/sandbox.md); an absent field is off. */
  setSandboxWebhookFaults(body: JsonBody<'setSandboxWebhookFaults'>, options?: CallOptions): Promise<Success<'setSandboxWebhookFaults'>> {
    return this.call({ op: 'setSandboxWebhookFaults', body, ...(options === undefined ? {} : { options }) });
  }
  getSandboxWebhookFaults(options?: CallOptions): Promise<Success<'getSandboxWebhookFaults'>> {
    return this.call({ op: 'getSandboxWebhookFaults', ...(options === undefined ? {} : { options }) });
  }
  resetSandboxWebhookFaults(options?: CallOptions): Promise<Success<'resetSandboxWebhookFaults'>> {
    return this.call({ op: 'resetSandboxWebhookFaults', ...(options === undefined ? {} : { options }) });
  }
  /** Sandbox test clocks of one of your transactions: expire now, fail its payout, short its next deposit. */
  sandboxExpire(id: string, options?: CallOptions): Promise<Success<'sandboxExpire'>> {
    return this.call({ op: 'sandboxExpire', path: { id }, ...(options === undefined ? {} : { options }) });
  }
  sandboxFailNextPayout(id: string, options?: CallOptions): Promise<Success<'sandboxFailNextPayout'>> {
    return this.call({ op: 'sandboxFailNextPayout', path: { id }, ...(options === undefined ? {} : { options }) });
  }
  sandboxShortNextDeposit(id: string, options?: CallOptions): Promise<Success<'sandboxShortNextDeposit'>> {
    return this.call({ op: 'sandboxShortNextDeposit', path: { id }, ...(options === undefined ? {} : { options }) });
  }

  private url(call: RawCall): string {
    const [, template] = operationRoutes[call.op];
    let path: string = template;
    for (const [name, value] of Object.entries(call.path ?? {})) path = path.replace(`{${name}}`, encodeURIComponent(value));
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined) query.set(name, String(value));
    const text = query.toString();
    return `${this.baseUrl}${path}${text === '' ? '' : `?${text}`}`;
  }

  private headers(call: RawCall, idempotencyKey: string | null): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (call.op === 'reconcileHash') {
      if (this.options.opsApiKey !== undefined) headers['x-ops-api-key'] = this.options.opsApiKey;
    } else if (this.options.apiKey !== undefined) {
      headers['x-api-key'] = this.options.apiKey;
    }
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
    if (call.options?.requestId !== undefined) headers['x-request-id'] = call.options.requestId;
    return headers;
  }

  /** One call: the same Idempotency-Key on every attempt; retries as the header comment says. */
  private async call<T>(call: RawCall): Promise<T> {
    const [method] = operationRoutes[call.op];
    const idempotencyKey = method === 'POST' ? (call.options?.idempotencyKey ?? this.newIdempotencyKey()) : null;
    const url = this.url(call);
    const headers = this.headers(call, idempotencyKey);
    const body = call.form ?? (call.body === undefined ? undefined : JSON.stringify(call.body));
    for (let attempt = 1; ; attempt += 1) {
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const signal = call.options?.signal === undefined ? timeout : AbortSignal.any([call.options.signal, timeout]);
      let response: Response;
      try {
        response = await this.fetchImpl(url, { method, headers, ...(body === undefined ? {} : { body }), signal, redirect: 'error' });
      } catch (error) {
        if (call.options?.signal?.aborted === true) throw error;
        if (attempt >= this.retry.attemptsMax) throw new PaymentsNetworkError(attempt, error);
        await this.sleep(this.backoffMs(attempt));
        continue;
      }
      if (response.status >= 200 && response.status < 300) return (await response.json()) as T;
      const failure = await this.errorOf(response);
      const waitMs = this.waitBeforeRetryMs(failure, attempt);
      if (waitMs === null) throw failure;
      await this.sleep(waitMs);
    }
  }

  private async errorOf(response: Response): Promise<PaymentsApiError> {
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (a proxy's page): kept as text
    }
    const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const code = typeof fields['code'] === 'string' ? (fields['code'] as ErrorCode) : 'unexpected_response';
    const reason = typeof fields['reason'] === 'string' ? fields['reason'] : `HTTP ${response.status}`;
    // Without an error body, only the statuses that always mean "try again later" are retryable.
    const retryable = typeof fields['retryable'] === 'boolean' ? fields['retryable'] : response.status === 429 || response.status === 503;
    const requestId = typeof fields['request_id'] === 'string' ? fields['request_id'] : response.headers.get('x-request-id');
    return new PaymentsApiError(response.status, code, reason, retryable, requestId, retryAfterSecondsOf(response.headers), body);
  }

  /** How long to wait before the next attempt, or null to give up and throw. */
  private waitBeforeRetryMs(failure: PaymentsApiError, attempt: number): number | null {
    if (!failure.retryable || attempt >= this.retry.attemptsMax) return null;
    if (failure.retryAfterSeconds !== null) {
      const waitMs = failure.retryAfterSeconds * 1_000;
      return waitMs > this.retry.retryAfterMsMax ? null : waitMs;
    }
    // A 429 is retried only when the service said how long to wait.
    if (failure.status === 429) return null;
    return this.backoffMs(attempt);
  }

  private backoffMs(attempt: number): number {
    return Math.min(this.retry.backoffMsMax, this.retry.backoffMsMin * 2 ** (attempt - 1));
  }
}
