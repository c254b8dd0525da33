// The transaction's pure core: decide(state, command, ctx) → events or a typed rejection, and
// evolve(state, event) → state. The TransactionActor loads the state, calls decide, appends the
// events, folds them with evolve, then runs the effects the events ask for (payout, crypto
// delivery, refund, webhooks, limit reservations). Time comes in as `ctx.nowMs`; nothing here reads
// a clock, draws randomness or does I/O. Decisions where the spec is silent: docs/decisions-states.md.
//
// Vocabulary. A "deposit" is the money a transaction is funded with: the partner's on-chain transfer
// for a payout (rail 'chain', id = the transfer's hash/signature) or the payer's PIX payment for an
// onramp (rail 'pix', id = the provider's payment id). The first deposit seen is the transaction's
// own; any later, different one is a "stray" deposit, refunded without touching the status.
// A chain deposit that would be refunded (wrong amount, late, stray) but is below its network's
// refund floor is dust: refused (`below_refund_floor`), so it neither changes the transaction nor
// costs a refund; the deposit actor records it for operations (src/domain/refund-floor.ts).
// The "settlement" is what the service does once funded: the fiat payout (payout direction) or the
// crypto delivery (onramp direction).
//
// The core lives in src/domain/transaction/, one file per seam: types (the vocabulary),
// transitions (which command in which status and direction), decide, evolve, invariants, deposits
// (a deposit against its quote) and effects (webhooks and limit effects). This module is its one
// public face: importers name it, and what is not exported here is private to the folder.
export type {
  CreateCommand,
  CryptoDeliveredCommand,
  CryptoDeliveryFailedCommand,
  DecideContext,
  Deposit,
  DepositDetectedCommand,
  ExpireCommand,
  MismatchKind,
  PayoutFailedCommand,
  PayoutSucceededCommand,
  PixPaymentReceivedCommand,
  RefundReason,
  RefundSettledCommand,
  RefundState,
  Settlement,
  StrayDeposit,
  TransactionCommand,
  TransactionCommandKind,
  TransactionDecision,
  TransactionEvent,
  TransactionEventType,
  TransactionRejection,
  TransactionRejectionCode,
  TransactionState,
  TransactionStatus,
} from './transaction/types.ts';
export { strayDepositsMax, transactionCommandKinds, transactionStatuses } from './transaction/types.ts';
export { commandDirections, transitionTable } from './transaction/transitions.ts';
export { decide } from './transaction/decide.ts';
export { evolve } from './transaction/evolve.ts';
export { assertTransactionInvariants } from './transaction/invariants.ts';
export { mismatchOf } from './transaction/deposits.ts';
export { limitEffectFor, webhookData, webhooksFor, type LimitEffect, type Webhook, type WebhookData, type WebhookEventName } from './transaction/effects.ts';
