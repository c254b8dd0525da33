// Every partner-facing operation of the edge, as data: path, method, what it takes (the request
// schemas the edge validates with, src/edge/schemas.ts), what it answers (response-schemas.ts),
// which statuses it can answer besides the ones every operation shares, and one example each.
// document.ts turns this table into the OpenAPI document; test/unit/openapi.test.ts checks that
// every route the edge serves has a row here and that no row names a route the edge lacks.
import { z } from 'zod';
import {
  chainNotifyBodySchema, kycFormSchema, liquidityQuerySchema, listQuerySchema, notifyBodySchema, qrDecoderQuerySchema,
  quoteBodySchema, reconcileBodySchema, sandboxBodySchema, transactionBodySchema, unmatchedListQuerySchema, userIdQuerySchema,
} from '../schemas.ts';
import { unmatchedDepositStates } from '../../domain/unmatched-deposits.ts';
import { documentTypes, kycFieldLengthMax } from '../../domain/kyc.ts';
import { cryptoAssets, fiatCurrencies, networks, paymentMethods } from '../../domain/assets.ts';
import { eventsPageSizeMax } from '../../webhooks/event-log.ts';
import { responseComponents, webhookFaultsSchema } from './response-schemas.ts';

export type Security = 'partner' | 'ops' | 'none';
export type ComponentName = keyof typeof responseComponents;

export interface OperationSpec {
  readonly method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI path template (`{id}`); the edge's pattern is the same with `:id`. */
  readonly path: string;
  readonly operationId: string;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  readonly security: Security;
  /** A JSON body (name of a request component) or the KYC multipart form. */
  readonly body?: { readonly kind: 'json'; readonly component: string; readonly example: unknown } | { readonly kind: 'multipart' };
  /** Query parameters: a zod object schema (from schemas.ts) and which are required. */
  readonly query?: z.ZodObject;
  readonly pathParams?: readonly string[];
  /** The success answer. */
  readonly success: { readonly status: number; readonly component: ComponentName; readonly example: unknown; readonly description: string };
  /** Statuses this operation answers besides the shared ones (document.ts, `sharedStatuses`). */
  readonly extraStatuses?: readonly number[];
  /** A status whose body is not the plain error body. */
  readonly specialErrors?: Readonly<Record<number, ComponentName>>;
  /** Sandbox mode only (404 otherwise). */
  readonly sandboxOnly?: boolean;
}

// Request components: the edge's own schemas. The enum-like route fields are plain bounded text
// there (the domain decides what an unknown value means: `corridor_unavailable`, not a schema
// error); the document narrows them to the values that can succeed, which is what a client
// generator should offer. The amount is read by pricing as an exact JSON number.
const routeFields = {
  crypto_currency: z.enum(cryptoAssets),
  network: z.enum(networks),
  payment_method: z.enum(paymentMethods),
  target_currency: z.enum(fiatCurrencies),
};
export const requestComponents = {
  QuoteRequest: quoteBodySchema.extend({ ...routeFields, amount: z.number().positive().meta({ description: 'Fiat the recipient receives.' }) }),
  ReverseQuoteRequest: quoteBodySchema.extend({ ...routeFields, source_amount: z.number().positive().meta({ description: 'Crypto to send.' }) }),
  OnrampQuoteRequest: quoteBodySchema.extend({
    ...routeFields,
    target_currency: z.literal('BRL'),
    payment_method: z.literal('PIX'),
    fiat_amount: z.number().positive().meta({ description: 'BRL the user pays.' }),
  }),
  TransactionRequest: transactionBodySchema.meta({
    description: 'At least one of account_number and qr_code. For an onramp quote, account_number is the wallet that receives the crypto. A legacy bank_code is ignored.',
  }),
  NotifyRequest: notifyBodySchema.extend({ blockchain: z.enum(['SOLANA', 'CELO']) }),
  ChainNotifyRequest: chainNotifyBodySchema,
  ReconcileRequest: reconcileBodySchema.extend({ blockchain: z.enum(networks) }),
  WebhookFaultsRequest: webhookFaultsSchema.partial().meta({ description: 'Every field optional: an absent one is off. An unknown field is refused (400).' }),
  SandboxRequest: sandboxBodySchema.extend({ amount: z.number().optional().meta({ description: 'Defaults to the quoted amount.' }) }),
  KycForm: kycFormSchema.extend({
    document: z.string().meta({ format: 'binary', description: 'JPEG, PNG, WebP, HEIC or PDF, at most 10 MiB.' }),
    fullName: z.string().max(kycFieldLengthMax.fullName),
    documentType: z.enum(documentTypes),
    documentNumber: z.string().max(kycFieldLengthMax.documentNumber),
    dateOfBirth: z.string().meta({ format: 'date' }),
    nationality: z.string().max(kycFieldLengthMax.nationality),
    city: z.string().max(kycFieldLengthMax.city),
    address: z.string().max(kycFieldLengthMax.address),
    email: z.string().max(kycFieldLengthMax.email).meta({ format: 'email' }),
    phone: z.string().max(kycFieldLengthMax.phone),
  }),
} as const;

const quoteExample = { quote_id: '6f1c2b1e-4a4e-4c31-9d53-1b1f6a0c2e11', value: 12.6, expiration_time: 1764100800000, fee: { amount: '0.13', currency: 'USDC', type: 'percentage' } };
const transactionId = '0b7d1f5e-8f9a-4d8e-a7a3-0c6f1a9e2b44';
const reference = 'C30fXo+aTY6nowxvGp4rRA==';
const payoutContextExample = {
  amount: 12.6, blockchain: 'STELLAR', chainFamily: 'stellar', chainId: 'stellar:pubnet', cryptoCurrency: 'USDC', decimals: 7,
  depositAddress: 'GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57', memo: reference, memoType: 'text', mintAddress: null,
  notify: { endpoint: null, required: false }, rpcUrl: null,
};
const payoutQuote = { amount: 50000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
const webhookDataExample = {
  id: transactionId, status: 'PAYMENT_COMPLETED', quoteId: quoteExample.quote_id, accountNumber: '3001234567', onChainId: 'a1b2…', refundOnChainId: null,
  taxId: null, externalId: null, partnerUserId: 'user-42',
};

const receiptExample = {
  receipt: {
    receipt_version: 1, transaction_id: transactionId, transaction_reference: reference, user_id: 'user-42', direction: 'payout', status: 'PAYMENT_COMPLETED', outcome: 'settled',
    quote: { id: quoteExample.quote_id, source_amount: '12.6', source_currency: 'USDC', target_amount: '50000', target_currency: 'COP', rate: '4000', fee: { amount: '0.13', currency: 'USDC', type: 'percentage' }, created_at: '2026-11-25T21:59:00.000Z' },
    deposit: { rail: 'chain', network: 'STELLAR', asset: 'USDC', hash: 'f'.repeat(64), amount: '12.6', received_at: '2026-11-25T22:00:05.000Z' },
    settlement: { kind: 'payout', rail: 'BREB', payment_id: 'breb_7d1f5e8f', amount: '50000', currency: 'COP', requested_at: '2026-11-25T22:00:05.000Z', completed_at: '2026-11-25T22:00:07.000Z' },
    refund: null, created_at: '2026-11-25T21:59:30.000Z',
  },
  signature: 'eyJhbGciOiJFZERTQSIsImI2NCI6ZmFsc2UsImNyaXQiOlsiYjY0Il0sImtpZCI6InJlY2VpcHRzLTIwMjYtMTEifQ..<base64url Ed25519 signature>',
};

const postIdempotent = [408, 409, 413, 415, 422];
const unmatchedExample = {
  id: '3e0b6c1d-52f4-4a8e-9b17-d2c4a6f80e35', state: 'open', network: 'STELLAR', asset: 'USDC', amount: '12.6',
  hash: 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90', sender: 'GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H',
  reason: 'deposit_late', partner_id: 'acme', transaction_id: transactionId, applied_to: null, refund_hash: null, refund_floor: null,
  hold_ends_at: 1764360000000, created_at: 1764100800000, updated_at: 1764100800000,
};

/** The sandbox's failure rehearsals (docs/sandbox.md): webhook faults and test clocks. */
function sandboxRehearsalOperations(): OperationSpec[] {
  const faults = { duplicate: true, out_of_order: false, delay_ms: 1500, wrong_signature_next: 1, drop_first_attempts: 2 };
  const faultsAnswer = (description: string, example: unknown) => ({ status: 200, component: 'WebhookFaults' as const, example, description });
  const off = { duplicate: false, out_of_order: false, delay_ms: 0, wrong_signature_next: 0, drop_first_attempts: 0 };
  const common = { tag: 'Sandbox', security: 'partner', sandboxOnly: true } as const;
  const clocks = [
    ['expire', 'sandboxExpire', 'Test clock: the transaction’s payment window ends now (real expiry, events and refunds)', 'PAYMENT_EXPIRED'],
    ['fail-next-payout', 'sandboxFailNextPayout', 'Test clock: the transaction’s payout is refused by the rail (real failure and refund)', 'AWAITING_PAYMENT'],
    ['short-next-deposit', 'sandboxShortNextDeposit', 'Test clock: the next POST /sandbox/deposits of the transaction sends 90 % of the quoted amount', 'AWAITING_PAYMENT'],
  ] as const;
  return [
    {
      ...common, method: 'put', path: '/sandbox/webhook-faults', operationId: 'setSandboxWebhookFaults',
      summary: 'Sandbox: the faults your webhook deliveries suffer from now on',
      body: { kind: 'json', component: 'WebhookFaultsRequest', example: faults },
      success: faultsAnswer('The settings now in force.', faults),
      extraStatuses: [404, 413, 415],
    },
    { ...common, method: 'get', path: '/sandbox/webhook-faults', operationId: 'getSandboxWebhookFaults', summary: 'Sandbox: your webhook faults', success: faultsAnswer('The settings in force (a counted fault shows what is left).', faults), extraStatuses: [404] },
    { ...common, method: 'delete', path: '/sandbox/webhook-faults', operationId: 'resetSandboxWebhookFaults', summary: 'Sandbox: every webhook fault off', success: faultsAnswer('Every fault off.', off), extraStatuses: [404] },
    ...clocks.map(([name, operationId, summary, status]): OperationSpec => ({
      ...common, method: 'post', path: `/sandbox/transactions/{id}/${name}`, operationId, summary, pathParams: ['id'],
      success: { status: 200, component: 'SandboxRehearsal', example: { transaction_id: transactionId, rehearsal: name, status }, description: 'Armed (or, for expire, done).' },
      extraStatuses: [404, ...postIdempotent],
    })),
  ];
}

export const operations: readonly OperationSpec[] = [
  {
    method: 'post', path: '/quote', operationId: 'createQuote', tag: 'Quotes', security: 'partner',
    summary: 'Quote a payout from the fiat amount the recipient receives',
    body: { kind: 'json', component: 'QuoteRequest', example: payoutQuote },
    success: { status: 200, component: 'Quote', example: quoteExample, description: 'The quote; `value` is the crypto to send, fee included.' },
    extraStatuses: postIdempotent,
  },
  {
    method: 'post', path: '/quote/reverse', operationId: 'createReverseQuote', tag: 'Quotes', security: 'partner',
    summary: 'Quote a payout from the crypto amount to send',
    body: { kind: 'json', component: 'ReverseQuoteRequest', example: { source_amount: 12.6, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' } },
    success: { status: 200, component: 'Quote', example: { ...quoteExample, value: 49950 }, description: 'The quote; `value` is the fiat the recipient gets.' },
    extraStatuses: postIdempotent,
  },
  {
    method: 'post', path: '/quote/onramp', operationId: 'createOnrampQuote', tag: 'Quotes', security: 'partner',
    summary: 'Quote an onramp (BRL paid by PIX, crypto delivered)',
    body: { kind: 'json', component: 'OnrampQuoteRequest', example: { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX' } },
    success: { status: 200, component: 'Quote', example: { ...quoteExample, value: 17.9 }, description: 'The quote; `value` is the crypto the user receives.' },
    extraStatuses: postIdempotent,
  },
  {
    method: 'post', path: '/transaction', operationId: 'acceptTransaction', tag: 'Transactions', security: 'partner',
    summary: 'Accept a transaction from a quote',
    description: 'A quote backs at most one transaction. When KYC is required, nothing is created and `kycRequired` is true (still 200).',
    body: { kind: 'json', component: 'TransactionRequest', example: { quote_id: quoteExample.quote_id, user_id: 'user-42', account_number: '3001234567' } },
    success: { status: 200, component: 'Acceptance', example: { id: transactionId, kycRequired: false, transaction_reference: reference, payment_context: payoutContextExample }, description: 'The acceptance; fund it as `payment_context` says.' },
    extraStatuses: [403, ...postIdempotent],
  },
  {
    method: 'get', path: '/transaction/{id}', operationId: 'getTransaction', tag: 'Transactions', security: 'partner',
    summary: "A transaction's status", pathParams: ['id'],
    success: { status: 200, component: 'TransactionStatusView', example: { id: transactionId, status: 'AWAITING_PAYMENT', transaction_reference: reference, on_chain_tx_hash: null, kycRequired: false, user_id: 'user-42' }, description: 'The latest status.' },
    extraStatuses: [404],
  },
  {
    method: 'get', path: '/transaction/{id}/receipt', operationId: 'getReceipt', tag: 'Transactions', security: 'partner',
    summary: "A transaction's signed settlement receipt", pathParams: ['id'],
    description: 'For a PAYMENT_COMPLETED transaction, or one whose deposit was refunded (409 `receipt_not_available` before). Verify `signature` with the keys of GET /.well-known/jwks.json (docs/receipts.md).',
    success: { status: 200, component: 'SignedReceipt', example: receiptExample, description: 'The receipt and its detached JWS.' },
    extraStatuses: [404, 409],
  },
  {
    method: 'get', path: '/.well-known/jwks.json', operationId: 'getReceiptKeys', tag: 'Transactions', security: 'none',
    summary: 'The public keys that verify settlement receipts (JWKS)',
    description: 'Every published key, the signing one first; keys of earlier rotations stay so old receipts keep verifying. Cacheable (Cache-Control).',
    success: { status: 200, component: 'Jwks', example: { keys: [{ kty: 'OKP', crv: 'Ed25519', kid: 'receipts-2026-11', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', alg: 'EdDSA', use: 'sig' }] }, description: 'A JWK Set (RFC 7517).' },
  },
  {
    method: 'get', path: '/transactions/list', operationId: 'listTransactions', tag: 'Transactions', security: 'partner',
    summary: "One user's transactions, newest first", query: listQuerySchema,
    success: { status: 200, component: 'TransactionList', example: { page: 1, pageSize: 20, total: 0, transactions: [] }, description: 'A page.' },
  },
  {
    method: 'get', path: '/unmatched-deposits/list', operationId: 'listUnmatchedDeposits', tag: 'Unmatched deposits', security: 'partner',
    summary: 'Your unmatched deposits, newest first',
    description: 'Deposits that funded no transaction (late, too many, dust…) and are attributable to you. Filters: state, network, created range (epoch ms, inclusive). See docs/unmatched-deposits.md.',
    query: unmatchedListQuerySchema.extend({
      state: z.enum(unmatchedDepositStates).optional(),
      network: z.enum(networks).optional(),
      created_from: z.string().regex(/^\d+$/).optional().meta({ description: 'Epoch ms, inclusive.' }),
      created_to: z.string().regex(/^\d+$/).optional().meta({ description: 'Epoch ms, inclusive.' }),
    }),
    success: { status: 200, component: 'UnmatchedDepositList', example: { page: 1, pageSize: 20, total: 1, unmatched_deposits: [unmatchedExample] }, description: 'A page.' },
  },
  {
    method: 'get', path: '/unmatched-deposit/{id}', operationId: 'getUnmatchedDeposit', tag: 'Unmatched deposits', security: 'partner',
    summary: 'One unmatched deposit', pathParams: ['id'],
    success: { status: 200, component: 'UnmatchedDeposit', example: unmatchedExample, description: 'The deposit as it is now.' },
    extraStatuses: [404],
  },
  {
    method: 'post', path: '/unmatched-deposit/{id}/refund', operationId: 'refundUnmatchedDeposit', tag: 'Unmatched deposits', security: 'partner',
    summary: 'Refund an open unmatched deposit to its sender',
    description: 'Through the chain refund path, once: a repeat or a concurrent call answers the deposit as it is (refunding or refunded) and never refunds twice. Below the refund floor: 409 refund_withheld. Applied: 409 unmatched_deposit_not_open. No body is read.',
    pathParams: ['id'],
    success: { status: 200, component: 'UnmatchedDeposit', example: { ...unmatchedExample, state: 'refunding', hold_ends_at: null }, description: 'Refunding (or already refunding/refunded).' },
    extraStatuses: [404, ...postIdempotent],
  },
  {
    method: 'post', path: '/unmatched-deposit/{id}/apply', operationId: 'applyUnmatchedDeposit', tag: 'Unmatched deposits', security: 'partner',
    summary: 'Fund a new transaction from a fresh quote with an open unmatched deposit',
    description: 'The body is POST /transaction\'s. The quote must be yours, unused, a payout on the deposit\'s network and asset, for exactly the deposit\'s amount (else 400 deposit_quote_mismatch). The transaction is accepted as POST /transaction accepts it (same refusals) and funded by the deposit: no new transfer.',
    pathParams: ['id'],
    body: { kind: 'json', component: 'TransactionRequest', example: { quote_id: quoteExample.quote_id, user_id: 'user-42', account_number: '3001234567' } },
    success: { status: 200, component: 'UnmatchedDeposit', example: { ...unmatchedExample, state: 'applied', applied_to: '9a4c2e71-3b5d-4f60-8e1a-7c2b9d0f4e18', hold_ends_at: null }, description: 'Applied; `applied_to` is the new transaction.' },
    extraStatuses: [403, 404, ...postIdempotent],
  },
  {
    method: 'post', path: '/payments/notify', operationId: 'notifyPayment', tag: 'Payments', security: 'partner',
    summary: 'Report a Solana or Celo transfer', description: 'Required when `payment_context.notify.required` is true. Stellar deposits are detected by themselves (400 here).',
    body: { kind: 'json', component: 'NotifyRequest', example: { blockchain: 'SOLANA', on_chain_tx: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW', transaction_id: transactionId } },
    success: { status: 202, component: 'NotifyAccepted', example: { enqueued: true }, description: 'Verification enqueued.' },
    extraStatuses: [404, ...postIdempotent],
  },
  {
    method: 'post', path: '/solana/payments/notify', operationId: 'notifySolanaPayment', tag: 'Payments', security: 'partner',
    summary: 'Report a Solana transfer (per-chain form; prefer /payments/notify)',
    body: { kind: 'json', component: 'ChainNotifyRequest', example: { on_chain_tx: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW', transaction_id: transactionId } },
    success: { status: 202, component: 'NotifyAccepted', example: { enqueued: true }, description: 'Verification enqueued.' },
    extraStatuses: [404, ...postIdempotent],
  },
  {
    method: 'post', path: '/celo/payments/notify', operationId: 'notifyCeloPayment', tag: 'Payments', security: 'partner',
    summary: 'Report a Celo transfer (per-chain form; prefer /payments/notify)',
    body: { kind: 'json', component: 'ChainNotifyRequest', example: { on_chain_tx: `0x${'ab'.repeat(32)}`, transaction_id: transactionId } },
    success: { status: 202, component: 'NotifyAccepted', example: { enqueued: true }, description: 'Verification enqueued.' },
    extraStatuses: [404, ...postIdempotent],
  },
  {
    method: 'get', path: '/payments/liquidity', operationId: 'getLiquidity', tag: 'Payments', security: 'partner',
    summary: "Latest known liquidity of a payment method", query: liquidityQuerySchema.extend({ paymentMethod: z.enum(paymentMethods) }),
    success: { status: 200, component: 'Liquidity', example: { liquidity: 1000000000, message: 'COP liquidity as of 2026-11-25T22:00:00Z', success: true }, description: 'In the method’s currency.' },
  },
  {
    method: 'get', path: '/qr-decoder/br', operationId: 'decodeBrCode', tag: 'Payments', security: 'partner',
    summary: 'Decode a PIX BR Code', query: qrDecoderQuerySchema,
    success: { status: 200, component: 'QrDecoded', example: { decoded: { account: '123e4567-e12b-12d1-a456-426655440000', currency: 'BRL', name: 'Fulano de Tal' } }, description: 'The fields the code carries.' },
  },
  {
    method: 'get', path: '/kyc/status', operationId: 'getKycStatus', tag: 'KYC', security: 'partner',
    summary: "A user's KYC status", query: userIdQuerySchema,
    success: { status: 200, component: 'KycStatusView', example: { hasApproved: false, status: null }, description: 'null status: never submitted.' },
  },
  {
    method: 'post', path: '/kyc', operationId: 'submitKyc', tag: 'KYC', security: 'partner',
    summary: 'Submit a KYC form (multipart/form-data)', body: { kind: 'multipart' },
    success: { status: 201, component: 'KycSubmitted', example: { status: 'APPROVED' }, description: 'The record’s status.' },
    extraStatuses: postIdempotent,
  },
  {
    method: 'get', path: '/public/corridors', operationId: 'listCorridors', tag: 'Discovery', security: 'none',
    summary: 'Every enabled route (authoritative)',
    success: {
      status: 200, component: 'CorridorList', description: 'The routes enabled now.',
      example: { corridors: [{ blockchain: 'STELLAR', chainFamily: 'stellar', chainId: 'stellar:pubnet', cryptoCurrency: 'USDC', paymentMethod: 'BREB', targetCurrency: 'COP', minAmount: 10000, maxAmount: 5000000, notify: { endpoint: null, required: false }, walletSession: { chainId: 'stellar:pubnet', events: [], methods: ['stellar_signXDR'], namespace: 'stellar' } }] },
    },
  },
  {
    method: 'get', path: '/public/corridors/health', operationId: 'getCorridorHealth', tag: 'Discovery', security: 'none',
    summary: 'Live health of every enabled corridor',
    description: 'Rail state (up, degraded, down, since when), settlement p50/p95 over the last hour and day from real payouts, and a liquidity level (never the amount). Cached a few seconds (Cache-Control). Thresholds: docs/corridor-health.md.',
    success: {
      status: 200, component: 'CorridorHealth', description: 'One entry per enabled corridor.',
      example: { generated_at: '2026-11-25T22:00:00.000Z', corridors: [{ blockchain: 'STELLAR', cryptoCurrency: 'USDC', paymentMethod: 'BREB', targetCurrency: 'COP', rail: { state: 'up', since: null, recent_payouts: 12, recent_failure_share: 0 }, settlement: { last_hour: { payouts: 12, p50_ms: 2100, p95_ms: 4800 }, last_day: { payouts: 230, p50_ms: 2300, p95_ms: 6100 } }, liquidity: 'ok' }] },
    },
  },
  {
    method: 'get', path: '/events', operationId: 'listEvents', tag: 'Webhooks', security: 'partner',
    summary: 'The webhook events, in order (catch up after missed deliveries)',
    query: z.object({ after: z.string().optional().meta({ description: 'Sequence to start after (default 0).' }), limit: z.string().optional().meta({ description: `1–${eventsPageSizeMax} (default 100).` }) }),
    success: { status: 200, component: 'EventPage', example: { events: [{ sequence: 1, id: 'evt_0123', event: 'transaction.created', data: { ...webhookDataExample, status: 'AWAITING_PAYMENT', onChainId: null }, createdAtMs: 1764100000000 }], next_after: 1 }, description: 'A page of events.' },
  },
  {
    method: 'post', path: '/ops/transactions/reconcile-hash', operationId: 'reconcileHash', tag: 'Operations', security: 'ops',
    summary: 'Reconcile an on-chain hash (operators)',
    body: { kind: 'json', component: 'ReconcileRequest', example: { blockchain: 'CELO', on_chain_tx: `0x${'ab'.repeat(32)}`, transaction_id: transactionId } },
    success: { status: 200, component: 'ReconcileOutcome', example: { blockchain: 'CELO', on_chain_tx: `0x${'ab'.repeat(32)}`, result: 'enqueued', transaction_id: transactionId, transaction_status: 'AWAITING_PAYMENT', reason: null }, description: 'Every outcome is 200; see `result`.' },
    extraStatuses: postIdempotent, specialErrors: { 400: 'ReconcileInvalid' },
  },
  {
    method: 'post', path: '/sandbox/deposits', operationId: 'sandboxDeposit', tag: 'Sandbox', security: 'partner', sandboxOnly: true,
    summary: 'Sandbox: the chain receives the transaction’s deposit',
    body: { kind: 'json', component: 'SandboxRequest', example: { transaction_id: transactionId } },
    success: { status: 200, component: 'SandboxDeposit', example: { blockchain: 'STELLAR', on_chain_tx: 'f'.repeat(64), amount: 12.6, crypto_currency: 'USDC', sender: 'GSENDER…', deposit_address: 'GDEPOSIT…', memo: reference, notify: { endpoint: null, required: false } }, description: 'The transfer made.' },
    extraStatuses: [404, ...postIdempotent],
  },
  {
    method: 'post', path: '/sandbox/pix-payments', operationId: 'sandboxPixPayment', tag: 'Sandbox', security: 'partner', sandboxOnly: true,
    summary: 'Sandbox: the payer pays an onramp PIX charge',
    body: { kind: 'json', component: 'SandboxRequest', example: { transaction_id: transactionId } },
    success: { status: 200, component: 'SandboxPixPayment', example: { transaction_id: transactionId, charge_id: 'chg_1', provider_payment_id: 'pay_1', amount: 100, currency: 'BRL', status: 'PROCESSING_PAYMENT' }, description: 'The payment and the transaction’s status after it.' },
    extraStatuses: [404, ...postIdempotent],
  },
  ...sandboxRehearsalOperations(),
  {
    method: 'get', path: '/healthz', operationId: 'healthz', tag: 'Probes', security: 'none', summary: 'Liveness',
    success: { status: 200, component: 'Health', example: { status: 'ok' }, description: 'The process serves.' },
  },
  {
    method: 'get', path: '/readyz', operationId: 'readyz', tag: 'Probes', security: 'none', summary: 'Readiness',
    success: { status: 200, component: 'Ready', example: { status: 'ready', store: 'ok', bus: 'ok', shards: 'ok' }, description: 'Ready to serve.' },
    specialErrors: { 503: 'NotReady' },
  },
];

/** Example of a webhook delivery body (document.ts). */
export const webhookExample = { event: 'transaction.updated', data: webhookDataExample };

/** Routes the edge serves that are not partner API operations: not in the document. */
export const undocumentedRoutes: readonly string[] = ['GET /metrics', 'GET /openapi.json', 'GET /docs', 'GET /docs/:asset'];
