// The partner API's response bodies and webhook payloads as zod schemas, written once: the OpenAPI
// document (document.ts) turns them into its component schemas, and the e2e suite checks every
// response it receives against that document (test/support/openapi-validation.ts), so a route
// whose answer drifts from what is written here fails a test naming the route and the field.
// Objects are strict in the document (`additionalProperties: false` from zod's output mode): a
// field a route adds without documenting it is drift too. Enumerations come from the domain, so a
// new status or network cannot be sent before it is documented.
import { z } from 'zod';
import { cryptoAssets, fiatCurrencies, networks, paymentMethods } from '../../domain/assets.ts';
import { documentTypes, kycStatuses } from '../../domain/kyc.ts';
import { feeTypes } from '../../domain/quote.ts';
import { transactionStatuses } from '../../domain/transaction/types.ts';
import { webhookFaultBounds } from '../../domain/webhook-faults.ts';
import { unmatchedDepositStates } from '../../domain/unmatched-deposits.ts';
import { webhookEventNames } from '../../webhooks/records.ts';
import { jwksSchema, receiptSchema, signedReceiptSchema } from './receipt-schemas.ts';
import { corridorHealthSchema } from './health-schemas.ts';

export const networkSchema = z.enum(networks).meta({ description: 'Blockchain the crypto moves on.' });
export const cryptoAssetSchema = z.enum(cryptoAssets);
export const fiatCurrencySchema = z.enum(fiatCurrencies);
export const paymentMethodSchema = z.enum(paymentMethods);
export const transactionStatusSchema = z.enum(transactionStatuses).meta({
  description:
    'AWAITING_PAYMENT → PROCESSING_PAYMENT → PAYMENT_COMPLETED; PAYMENT_EXPIRED (quote expired unpaid), PAYMENT_FAILED (payout failed, deposit refunded), WRONG_AMOUNT (deposit differed from the quote, refunded).',
});
export const kycStatusSchema = z.enum(kycStatuses);
export const documentTypeSchema = z.enum(documentTypes);
const chainFamilySchema = z.enum(['stellar', 'solana', 'evm']);
const uuidText = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

const notifySchema = z.strictObject({
  endpoint: z.string().nullable().meta({ description: '`/payments/notify` where a notification is required, else null.' }),
  required: z.boolean(),
});

export const feeSchema = z.strictObject({
  amount: z.string().meta({ description: 'Exact fee, already included in `value`; do not add it again.', examples: ['0.25'] }),
  currency: z.string().meta({ description: 'The crypto asset of the fee.' }),
  type: z.enum(feeTypes),
});

export const quoteSchema = z.strictObject({
  quote_id: uuidText,
  value: z.number().meta({
    description: 'Payout quote: crypto to send, fee included. Reverse quote: fiat the recipient gets. Onramp quote: crypto the user receives.',
  }),
  expiration_time: z.number().int().meta({ description: 'Unix epoch in milliseconds.' }),
  fee: feeSchema,
});

export const payoutPaymentContextSchema = z.strictObject({
  amount: z.number().meta({ description: "Exact amount to send; equals the quote's value." }),
  blockchain: networkSchema,
  chainFamily: chainFamilySchema,
  chainId: z.string().meta({ examples: ['stellar:pubnet', 'solana:mainnet', 'eip155:42220'] }),
  cryptoCurrency: z.string(),
  decimals: z.number().int().nullable(),
  depositAddress: z.string().meta({ description: 'Where to send it; read it from here every time (addresses rotate, Solana and Celo have one per transaction).' }),
  memo: z.string().nullable().meta({ description: 'Stellar: the memo to attach (the transaction_reference). Null elsewhere.' }),
  memoType: z.literal('text').nullable(),
  mintAddress: z.string().nullable(),
  notify: notifySchema,
  rpcUrl: z.string().nullable(),
});

export const onrampPaymentContextSchema = z.strictObject({
  type: z.literal('pix_charge'),
  amount: z.number().meta({ description: 'BRL to pay by PIX.' }),
  currency: z.literal('BRL'),
  paymentMethod: z.literal('PIX'),
  brCode: z.string().meta({ description: 'The dynamic BR Code ("copia e cola") payload.' }),
  chargeId: z.string(),
  expiresAt: z.number().int().meta({ description: "Epoch ms; the quote's expiration_time." }),
  blockchain: networkSchema,
  chainFamily: chainFamilySchema,
  chainId: z.string(),
  cryptoCurrency: z.string(),
  cryptoAmount: z.number(),
  decimals: z.number().int(),
  mintAddress: z.string().nullable(),
  destination: z.string().meta({ description: 'The wallet that receives the crypto.' }),
});

export const acceptanceSchema = z.strictObject({
  id: uuidText.nullable().meta({ description: 'The transaction id; null when kycRequired.' }),
  kycRequired: z.boolean(),
  transaction_reference: z.string().nullable().meta({ description: 'Base64 of the id: the Stellar memo. Null when kycRequired.' }),
  payment_context: z.union([payoutPaymentContextSchema, onrampPaymentContextSchema]).nullable(),
});

export const transactionStatusViewSchema = z.strictObject({
  id: uuidText,
  status: transactionStatusSchema,
  transaction_reference: z.string(),
  on_chain_tx_hash: z.string().nullable(),
  kycRequired: z.boolean(),
  user_id: z.string(),
});

export const transactionListItemSchema = z.strictObject({
  id: uuidText,
  status: transactionStatusSchema,
  accountNumber: z.string().nullable(),
  onChainId: z.string().nullable(),
  quote: z.strictObject({
    id: uuidText,
    cryptoCurrency: cryptoAssetSchema,
    network: networkSchema,
    paymentMethod: paymentMethodSchema,
    sourceAmount: z.number(),
    targetAmount: z.number(),
    targetCurrency: fiatCurrencySchema,
  }),
});

export const transactionListSchema = z.strictObject({
  page: z.number().int().min(1),
  pageSize: z.number().int().min(1).max(100),
  total: z.number().int().min(0),
  transactions: z.array(transactionListItemSchema),
});

export const unmatchedDepositSchema = z.strictObject({
  id: uuidText,
  state: z.enum(unmatchedDepositStates).meta({
    description: 'open (waiting for your refund or apply; refunded automatically when `hold_ends_at` passes) → refunding → refunded; or open → applied.',
  }),
  network: networkSchema,
  asset: cryptoAssetSchema,
  amount: z.string().meta({ description: 'Exact amount in token units, as a decimal string.', examples: ['12.6'] }),
  hash: z.string().meta({ description: 'The deposit\'s chain transaction (Stellar hash, Solana signature, Celo hash).' }),
  sender: z.string().meta({ description: 'Where a refund goes.' }),
  reason: z.string().meta({ description: 'Why it matched nothing: deposit_late, too_many_deposits, below_refund_floor, memo_unknown, …' }),
  partner_id: z.string().nullable(),
  transaction_id: uuidText.nullable().meta({ description: 'The transaction it was meant for, when one is known (e.g. the expired one).' }),
  applied_to: uuidText.nullable().meta({ description: 'The transaction it funds, once applied.' }),
  refund_hash: z.string().nullable().meta({ description: 'The refund\'s chain transaction, once refunded.' }),
  refund_floor: z.string().nullable().meta({ description: 'Set when the amount is below the network\'s refund floor (never refunded; it can still be applied).' }),
  hold_ends_at: z.number().int().nullable().meta({ description: 'Epoch ms when an open deposit is refunded automatically; null when nothing is due.' }),
  created_at: z.number().int(),
  updated_at: z.number().int(),
});

export const unmatchedDepositListSchema = z.strictObject({
  page: z.number().int().min(1),
  pageSize: z.number().int().min(1).max(100),
  total: z.number().int().min(0),
  unmatched_deposits: z.array(unmatchedDepositSchema),
});

export const kycStatusViewSchema = z.strictObject({ hasApproved: z.boolean(), status: kycStatusSchema.nullable() });
export const kycSubmittedSchema = z.strictObject({ status: kycStatusSchema });

export const corridorSchema = z.strictObject({
  blockchain: networkSchema,
  chainFamily: chainFamilySchema,
  chainId: z.string(),
  cryptoCurrency: cryptoAssetSchema,
  paymentMethod: paymentMethodSchema,
  targetCurrency: fiatCurrencySchema,
  minAmount: z.number().nullable().meta({ description: "In targetCurrency; null means no bound." }),
  maxAmount: z.number().nullable(),
  notify: notifySchema,
  walletSession: z.strictObject({ chainId: z.string(), events: z.array(z.string()), methods: z.array(z.string()), namespace: z.string() }),
});
export const corridorListSchema = z.strictObject({ corridors: z.array(corridorSchema) });

export const qrDecodedSchema = z.strictObject({
  decoded: z.strictObject({
    account: z.string().optional(),
    amount: z.string().optional(),
    currency: z.string().optional(),
    name: z.string().optional(),
    taxId: z.string().optional(),
  }),
});

export const liquiditySchema = z.strictObject({ liquidity: z.number(), message: z.string(), success: z.boolean() });
export const notifyAcceptedSchema = z.strictObject({ enqueued: z.literal(true) });

export const reconcileResults = ['alreadyProcessed', 'enqueued', 'unresolved', 'invalid', 'notFound', 'failed'] as const;
export const reconcileOutcomeSchema = z.strictObject({
  blockchain: networkSchema,
  on_chain_tx: z.string(),
  result: z.enum(reconcileResults),
  transaction_id: z.string().nullable(),
  transaction_status: z.string().nullable(),
  reason: z.string().nullable(),
});

export const sandboxDepositSchema = z.strictObject({
  blockchain: networkSchema,
  on_chain_tx: z.string().meta({ description: 'Send it to POST /payments/notify on Solana and Celo.' }),
  amount: z.number(),
  crypto_currency: z.string(),
  sender: z.string(),
  deposit_address: z.string(),
  memo: z.string().nullable(),
  notify: notifySchema,
});

export const sandboxPixPaymentSchema = z.strictObject({
  transaction_id: uuidText,
  charge_id: z.string(),
  provider_payment_id: z.string(),
  amount: z.number(),
  currency: z.literal('BRL'),
  status: transactionStatusSchema.nullable(),
  refused: z.string().optional(),
  queued: z.literal(true).optional(),
});

export const webhookFaultsSchema = z.strictObject({
  duplicate: z.boolean().meta({ description: 'Every delivery is sent twice, with the same event id.' }),
  out_of_order: z.boolean().meta({ description: 'A delivery is held and sent right after your next one (or alone after 5 s).' }),
  delay_ms: z.number().int().min(0).max(webhookFaultBounds.delayMsMax).meta({ description: 'Each attempt waits this long before it is sent.' }),
  wrong_signature_next: z.number().int().min(0).max(webhookFaultBounds.wrongSignatureNextMax).meta({ description: 'How many of the next attempts are still to be signed with a wrong secret.' }),
  drop_first_attempts: z.number().int().min(0).max(webhookFaultBounds.dropFirstAttemptsMax).meta({ description: 'The first N attempts of every event are not sent and count as failed (then retried as usual).' }),
});

export const sandboxRehearsalSchema = z.strictObject({
  transaction_id: uuidText,
  rehearsal: z.enum(['expire', 'fail-next-payout', 'short-next-deposit']),
  status: transactionStatusSchema.meta({ description: 'The transaction’s status after the call (PAYMENT_EXPIRED after expire).' }),
});

/** The spec's webhook data object (also the `data` of GET /events items). */
export const webhookDataSchema = z.strictObject({
  id: uuidText,
  status: transactionStatusSchema,
  quoteId: z.string(),
  accountNumber: z.string().nullable(),
  onChainId: z.string().nullable().meta({ description: 'Deposit (payout) or delivery (onramp) hash or signature.' }),
  refundOnChainId: z.string().nullable().meta({ description: 'Non-null once the money is back: refund hash/signature, or the PIX provider refund id.' }),
  taxId: z.string().nullable(),
  externalId: z.string().nullable(),
  partnerUserId: z.string(),
});

export const webhookEventSchema = z.strictObject({ event: z.enum(webhookEventNames), data: webhookDataSchema });

export const webhookTestEventSchema = z.strictObject({
  event: z.literal('webhook.test'),
  data: z.strictObject({ id: z.string(), createdAtMs: z.number().int() }),
});

export const eventPageSchema = z.strictObject({
  events: z.array(z.strictObject({ sequence: z.number().int(), id: z.string(), event: z.enum(webhookEventNames), data: webhookDataSchema, createdAtMs: z.number().int() })),
  next_after: z.number().int().meta({ description: 'Pass as `after` next time.' }),
});

export const healthSchema = z.strictObject({ status: z.literal('ok') });
const probeStates = z.enum(['ok', 'down', 'unserved', 'unknown']);
export const readySchema = z.strictObject({ status: z.literal('ready'), store: probeStates, bus: probeStates, shards: probeStates });

/** The error body of every non-2xx answer; `code` is narrowed per status in the document. */
export const errorBodySchema = z.strictObject({
  code: z.string(),
  reason: z.string().meta({ description: 'A human sentence naming the field or rule; never a secret or personal data.' }),
  retryable: z.boolean().meta({ description: 'True when the very same request may succeed later.' }),
  request_id: z.string().meta({ description: 'The X-Request-Id of this response; quote it to support.' }),
});

/** 503 of GET /readyz: the error body plus what is missing. */
export const notReadySchema = errorBodySchema.extend({ store: probeStates, bus: probeStates, shards: probeStates });

/** 400 of POST /ops/transactions/reconcile-hash: the error body plus the spec's reconcile fields. */
export const reconcileInvalidSchema = errorBodySchema.extend({
  blockchain: z.string().nullable(),
  on_chain_tx: z.string().nullable(),
  result: z.literal('invalid'),
  transaction_id: z.string().nullable(),
  transaction_status: z.null(),
});

/** Named schemas: each becomes `#/components/schemas/<name>` (nested ones are referenced, not copied). */
export const responseComponents = {
  Network: networkSchema,
  TransactionStatus: transactionStatusSchema,
  KycStatus: kycStatusSchema,
  Fee: feeSchema,
  Quote: quoteSchema,
  PayoutPaymentContext: payoutPaymentContextSchema,
  OnrampPaymentContext: onrampPaymentContextSchema,
  Acceptance: acceptanceSchema,
  TransactionStatusView: transactionStatusViewSchema,
  TransactionListItem: transactionListItemSchema,
  TransactionList: transactionListSchema,
  UnmatchedDeposit: unmatchedDepositSchema,
  UnmatchedDepositList: unmatchedDepositListSchema,
  KycStatusView: kycStatusViewSchema,
  KycSubmitted: kycSubmittedSchema,
  Corridor: corridorSchema,
  CorridorList: corridorListSchema,
  QrDecoded: qrDecodedSchema,
  Liquidity: liquiditySchema,
  NotifyAccepted: notifyAcceptedSchema,
  ReconcileOutcome: reconcileOutcomeSchema,
  ReconcileInvalid: reconcileInvalidSchema,
  SandboxDeposit: sandboxDepositSchema,
  SandboxPixPayment: sandboxPixPaymentSchema,
  WebhookFaults: webhookFaultsSchema,
  SandboxRehearsal: sandboxRehearsalSchema,
  WebhookData: webhookDataSchema,
  WebhookEvent: webhookEventSchema,
  WebhookTestEvent: webhookTestEventSchema,
  EventPage: eventPageSchema,
  Health: healthSchema,
  Ready: readySchema,
  NotReady: notReadySchema,
  ErrorBody: errorBodySchema,
  Receipt: receiptSchema,
  SignedReceipt: signedReceiptSchema,
  Jwks: jwksSchema,
  CorridorHealth: corridorHealthSchema,
} as const;
