// Sending from the Stellar hot wallet, at most once per idempotency key (docs/stellar.md, "Sends").
//
// Stellar has no idempotency keys, so the guarantee comes from recording before broadcasting and
// from sequence numbers:
// - The signed envelope (XDR) and its hash are written to the journal with putIfAbsent BEFORE the
//   first submission. A retry (another call, another process, after a crash) reads the record and
//   resubmits the same bytes, or finds the hash on chain; it never signs a fresh transfer for a key
//   whose recorded envelope could still land.
// - A recorded envelope that can never land is replaced by a new attempt (also recorded first):
//   (a) expired (past its maxTime) with its sequence number still unused: the replacement reuses
//       that sequence number, so at most one of the two can ever be applied; or
//   (b) its sequence number was consumed by another transaction (account sequence ≥ its sequence)
//       and its hash is not on chain: it is dead for good, and the replacement takes a fresh one.
//   The account is read BEFORE the hashes are looked up: if the attempt consumed the sequence, the
//   hash lookup that follows sees it (Horizon ingests a ledger's transactions and accounts together).
//   Behind a load balancer the two reads can reach different Horizon nodes, the lookup a lagging
//   one; so (b) replaces only once the attempt has stayed unfound for `consumedSettleMs` since the
//   consumed sequence was first seen (recorded in the journal), answering 'pending' until then —
//   the settle window every chain shares (src/chains/send-settle.ts).
// - 'confirmed' only for a hash Horizon reports as successful in a closed ledger; anything not yet
//   seen is 'pending'.
import { Account, Asset, Keypair, Memo, Operation, StrKey, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { SendJournal, SendRequest, SendResult } from './chains.ts';
import { checkedSettleMs, unseenLongEnough, unseenSettleMsDefault } from './send-settle.ts';
import type { HorizonClient, SubmitOutcome } from './stellar-horizon.ts';
import { formatStellarAmount, stellarMemoTextBytesMax, type StellarAssetIssuers } from './stellar-records.ts';
import type { JsonObject } from '../store/store.ts';

/** Fee bid per operation in stroops (0.001 XLM): the maximum paid under surge pricing. */
export const sendFeeStroopsDefault = 10_000;
/** An envelope is valid this long after signing; then it is replaced (same sequence number). */
export const sendValiditySecondsDefault = 300;
/** How long a consumed sequence number's attempt must stay unfound before it is replaced (lagging Horizon nodes). */
export const sendConsumedSettleMsDefault = unseenSettleMsDefault;
/** Attempts per idempotency key (replacements of dead envelopes included); then operations take over. */
export const sendAttemptsMax = 8;
/** The journal key stays under the store's 256-byte identifier limit with the longest suffix. */
const journalKeyBytesMax = 200;

export interface StellarSenderOptions {
  readonly horizon: HorizonClient;
  readonly journal: SendJournal;
  readonly assets: StellarAssetIssuers;
  /** The hot wallet's secret seed; null when none is configured (every send then fails). */
  readonly signerSecret: string | null;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  readonly feeStroops?: number;
  readonly validitySeconds?: number;
  readonly consumedSettleMs?: number;
  /** Test hook: runs after the first envelope is recorded and before it is submitted (a crash there). */
  readonly afterRecord?: (idempotencyKey: string) => Promise<void>;
}

/** One signed envelope for a key, as recorded in the journal. */
interface Attempt {
  readonly number: number;
  /** The account that signed it (the hot wallet at the time): its sequence numbers decide liveness. */
  readonly source: string;
  readonly hash: string;
  readonly xdr: string;
  readonly sequence: bigint;
  readonly maxTimeSeconds: number;
}

/** A validated request: what gets signed. */
interface Plan {
  readonly idempotencyKey: string;
  readonly journalKey: string;
  readonly asset: Asset;
  readonly assetName: string;
  readonly amountText: string;
  readonly destination: string;
  readonly memo: string | null;
}

type Outcome = { readonly kind: 'result'; readonly result: SendResult } | { readonly kind: 'plan'; readonly plan: Plan };

const failed = (reason: string, retryable: boolean): SendResult => ({ status: 'failed', reason, retryable });

/** Transaction-level rejections (nothing applied, sequence unused) worth trying again later. */
const retryableRejections = new Set(['tx_insufficient_fee', 'tx_insufficient_balance', 'tx_too_early', 'tx_no_account', 'tx_internal_error']);

/** Operation failures of an applied (failed) transaction: only our own lack of funds is worth a retry. */
function retryableOperationFailure(codes: readonly string[]): boolean {
  return codes.length > 0 && codes.every((code) => code === 'op_success' || code === 'op_underfunded' || /underfunded$/i.test(code));
}

/** The operation result names of a failed transaction's TransactionResult XDR ([] if unreadable). */
export function failedOperationCodes(resultXdr: string | null): string[] {
  if (resultXdr === null) return [];
  try {
    const result = xdr.TransactionResult.fromXDR(resultXdr, 'base64').result();
    if (result.switch().name !== 'txFailed') return [result.switch().name];
    return result.results().map((operation) => (operation.switch().name === 'opInner' ? operation.tr().value().switch().name : operation.switch().name));
  } catch {
    return [];
  }
}

function journalBaseKey(idempotencyKey: string): string {
  if (Buffer.byteLength(idempotencyKey, 'utf8') <= journalKeyBytesMax - 16 && !idempotencyKey.includes('\0')) return `STELLAR:${idempotencyKey}`;
  return `STELLAR:sha256:${createHash('sha256').update(idempotencyKey).digest('hex')}`;
}

export class StellarSender {
  private readonly signer: Keypair | null;
  private readonly feeStroops: number;
  private readonly validitySeconds: number;
  private readonly consumedSettleMs: number;
  /** Sends of one process run one at a time: Core holds one transaction per source account anyway. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: StellarSenderOptions) {
    this.signer = options.signerSecret === null ? null : Keypair.fromSecret(options.signerSecret);
    this.feeStroops = options.feeStroops ?? sendFeeStroopsDefault;
    this.validitySeconds = options.validitySeconds ?? sendValiditySecondsDefault;
    this.consumedSettleMs = checkedSettleMs(options.consumedSettleMs, 'STELLAR consumedSettleMs');
  }

  /** The hot wallet's account id (null when no signer is configured). */
  get source(): string | null {
    return this.signer?.publicKey() ?? null;
  }

  send(request: SendRequest): Promise<SendResult> {
    const checked = this.validate(request);
    if (checked.kind === 'result') return Promise.resolve(checked.result);
    const run = this.queue.then(() => this.sendLocked(checked.plan));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private validate(request: SendRequest): Outcome {
    const reject = (reason: string): Outcome => ({ kind: 'result', result: failed(reason, false) });
    if (request.network !== 'STELLAR') return reject(`the Stellar adapter cannot send on ${request.network}`);
    const issuer = this.options.assets[request.asset];
    if (issuer === undefined) return reject(`${request.asset} is not configured on Stellar`);
    const amountText = formatStellarAmount(request.amount);
    if (amountText === null) return reject('amount must be positive with at most 7 decimals');
    if (!StrKey.isValidEd25519PublicKey(request.destination) && !StrKey.isValidMed25519PublicKey(request.destination)) {
      return reject('destination is not a Stellar account');
    }
    const memo = request.memo ?? null;
    if (memo !== null && Buffer.byteLength(memo, 'utf8') > stellarMemoTextBytesMax) return reject(`memo is longer than ${stellarMemoTextBytesMax} bytes`);
    if (request.idempotencyKey === '') return reject('idempotencyKey is empty');
    return {
      kind: 'plan',
      plan: {
        idempotencyKey: request.idempotencyKey,
        journalKey: journalBaseKey(request.idempotencyKey),
        asset: new Asset(request.asset, issuer),
        assetName: request.asset,
        amountText,
        destination: request.destination,
        memo,
      },
    };
  }

  private async sendLocked(plan: Plan): Promise<SendResult> {
    let first = await this.options.journal.get(plan.journalKey);
    if (first !== null && !this.sameRequest(first, plan)) return failed('idempotency key reused for a different send', false);
    const settled = await this.options.journal.get(`${plan.journalKey}#outcome`);
    if (settled !== null) return resultOf(settled);
    if (first === null) {
      if (this.signer === null) return failed('no Stellar hot wallet secret is configured', false);
      const sequence = await this.options.horizon.accountSequence(this.signer.publicKey());
      if (sequence === null) return failed('the hot wallet account does not exist on the network', true);
      const attempt = this.sign(plan, 1, sequence + 1n);
      const recorded = await this.options.journal.putIfAbsent(plan.journalKey, { ...this.requestDoc(plan), ...attemptDoc(attempt) });
      if (recorded.status === 'inserted') {
        this.options.log.info({ network: 'STELLAR', hash: attempt.hash, attempt: 1 }, 'stellar send recorded');
        await this.options.afterRecord?.(plan.idempotencyKey);
        return this.submit(plan, [attempt], 1);
      }
      first = recorded.doc; // another process recorded this key first: continue with its envelope
    }
    if (!this.sameRequest(first, plan)) return failed('idempotency key reused for a different send', false);
    const settledMeanwhile = await this.options.journal.get(`${plan.journalKey}#outcome`);
    if (settledMeanwhile !== null) return resultOf(settledMeanwhile);
    return this.reconcile(plan, await this.loadAttempts(plan, first), 1);
  }

  /** Decides from the chain what happened to the recorded attempts, then resubmits or replaces. */
  private async reconcile(plan: Plan, attempts: Attempt[], replacementsLeft: number): Promise<SendResult> {
    const latest = attempts.at(-1);
    if (latest === undefined) return failed('nothing recorded to reconcile', false);
    const accountSequence = await this.options.horizon.accountSequence(latest.source);
    let latestFailedOnChain: string[] | null = null;
    for (const attempt of [...attempts].reverse()) {
      const onChain = await this.options.horizon.transaction(attempt.hash);
      if (onChain?.successful === true) return this.settle(plan, { status: 'confirmed', onChainId: attempt.hash });
      if (onChain !== null && attempt === latest) latestFailedOnChain = failedOperationCodes(onChain.resultXdr);
    }
    if (latestFailedOnChain !== null) {
      if (!retryableOperationFailure(latestFailedOnChain)) {
        return this.settle(plan, failed(`transaction failed on chain: ${latestFailedOnChain.join(',') || 'unknown'}`, false));
      }
      return this.replace(plan, attempts, null, replacementsLeft, 'previous attempt failed on chain for lack of funds');
    }
    if (accountSequence === null) return failed('the hot wallet account does not exist on the network', true);
    if (accountSequence >= latest.sequence) {
      if (!(await this.unfoundLongEnough(plan, latest))) return { status: 'pending', onChainId: latest.hash };
      return this.replace(plan, attempts, null, replacementsLeft, 'sequence number consumed by another transaction');
    }
    if (Math.floor(this.options.clock.nowMs() / 1000) > latest.maxTimeSeconds) {
      return this.replace(plan, attempts, latest.sequence, replacementsLeft, 'envelope expired unsubmitted');
    }
    return this.submit(plan, attempts, replacementsLeft);
  }

  /**
   * Whether the attempt has stayed unfound on chain for `consumedSettleMs` since its sequence number
   * was first seen consumed: the rule every chain shares (src/chains/send-settle.ts).
   */
  private async unfoundLongEnough(plan: Plan, latest: Attempt): Promise<boolean> {
    const sightingKey = `${plan.journalKey}#${latest.number}#consumed`;
    return unseenLongEnough(this.options.journal, sightingKey, this.options.clock.nowMs(), this.consumedSettleMs);
  }

  /** Records a new attempt (same sequence number, or a fresh one) and submits it. */
  private async replace(plan: Plan, attempts: Attempt[], sequence: bigint | null, replacementsLeft: number, why: string): Promise<SendResult> {
    const latest = attempts.at(-1);
    if (latest === undefined) return failed('nothing recorded to replace', false);
    if (this.signer === null) return failed('no Stellar hot wallet secret is configured', false);
    // A replacement is safe only from the account whose sequence numbers decided the old one is dead.
    if (this.signer.publicKey() !== latest.source) return failed('the hot wallet changed since this send was signed; resolve it by hand', false);
    if (replacementsLeft <= 0) return { status: 'pending', onChainId: latest.hash };
    const number = latest.number + 1;
    if (number > sendAttemptsMax) return this.settle(plan, failed(`gave up after ${sendAttemptsMax} attempts (${why})`, false));
    let nextSequence = sequence;
    if (nextSequence === null) {
      const current = await this.options.horizon.accountSequence(this.signer.publicKey());
      if (current === null) return failed('the hot wallet account does not exist on the network', true);
      nextSequence = current + 1n;
    }
    const attempt = this.sign(plan, number, nextSequence);
    const recorded = await this.options.journal.putIfAbsent(`${plan.journalKey}#${number}`, { ...attemptDoc(attempt), reason: why });
    const next = recorded.status === 'inserted' ? attempt : readAttempt(recorded.doc, number);
    if (next === null) throw new Error(`malformed Stellar send journal record for attempt ${number}`);
    this.options.log.warn({ network: 'STELLAR', previous: latest.hash, hash: next.hash, attempt: number, why }, 'stellar send replaced a dead envelope');
    return this.submit(plan, [...attempts, next], replacementsLeft - 1);
  }

  private async submit(plan: Plan, attempts: Attempt[], replacementsLeft: number): Promise<SendResult> {
    const latest = attempts.at(-1);
    if (latest === undefined) return failed('nothing to submit', false);
    const outcome: SubmitOutcome = await this.options.horizon.submit(latest.xdr);
    switch (outcome.kind) {
      case 'success':
        return this.settle(plan, { status: 'confirmed', onChainId: latest.hash });
      case 'memo_required':
        return this.settle(plan, failed('the destination requires a memo (SEP-29) and none was given', false));
      case 'unknown':
        this.options.log.warn({ network: 'STELLAR', hash: latest.hash, reason: outcome.reason }, 'stellar submission outcome unknown');
        return { status: 'pending', onChainId: latest.hash };
      case 'rejected':
        return this.rejected(plan, attempts, outcome, replacementsLeft);
    }
  }

  private async rejected(
    plan: Plan,
    attempts: Attempt[],
    outcome: Extract<SubmitOutcome, { kind: 'rejected' }>,
    replacementsLeft: number,
  ): Promise<SendResult> {
    const latest = attempts.at(-1);
    if (latest === undefined) return failed('nothing to submit', false);
    const codes = `${outcome.transactionCode}${outcome.operationCodes.length > 0 ? ` [${outcome.operationCodes.join(',')}]` : ''}`;
    this.options.log.warn({ network: 'STELLAR', hash: latest.hash, codes }, 'stellar submission rejected');
    if (outcome.transactionCode === 'tx_bad_seq' || outcome.transactionCode === 'tx_too_late') {
      // Either this envelope already landed (a resubmission) or it can never land: the chain decides.
      return this.reconcile(plan, attempts, replacementsLeft);
    }
    if (outcome.transactionCode === 'tx_failed') {
      const onChain = await this.options.horizon.transaction(latest.hash);
      if (onChain?.successful === true) return this.settle(plan, { status: 'confirmed', onChainId: latest.hash });
      const applied = onChain !== null;
      if (applied && retryableOperationFailure(outcome.operationCodes)) return failed(`transaction failed on chain: ${codes}`, true);
      return this.settle(plan, failed(`${applied ? 'transaction failed on chain' : 'transaction rejected'}: ${codes}`, false));
    }
    if (retryableRejections.has(outcome.transactionCode)) return failed(`transaction rejected: ${codes}`, true);
    return this.settle(plan, failed(`transaction rejected: ${codes}`, false));
  }

  /** Writes the final outcome once; the first writer wins and every caller returns what was written. */
  private async settle(plan: Plan, result: SendResult): Promise<SendResult> {
    const doc: JsonObject =
      result.status === 'failed' ? { status: 'failed', reason: result.reason } : { status: result.status, onChainId: result.onChainId };
    const written = await this.options.journal.putIfAbsent(`${plan.journalKey}#outcome`, doc);
    return written.status === 'inserted' ? result : resultOf(written.doc);
  }

  private sign(plan: Plan, number: number, sequence: bigint): Attempt {
    if (this.signer === null) throw new Error('no signer');
    const maxTimeSeconds = Math.floor(this.options.clock.nowMs() / 1000) + this.validitySeconds;
    const account = new Account(this.signer.publicKey(), (sequence - 1n).toString()); // the builder adds one
    const transaction = new TransactionBuilder(account, {
      fee: String(this.feeStroops),
      networkPassphrase: this.options.horizon.networkPassphrase,
      timebounds: { minTime: keyedMinTime(plan.idempotencyKey, number), maxTime: maxTimeSeconds },
    })
      .addOperation(Operation.payment({ destination: plan.destination, asset: plan.asset, amount: plan.amountText }))
      .addMemo(plan.memo === null ? Memo.none() : Memo.text(plan.memo))
      .build();
    transaction.sign(this.signer);
    return { number, source: this.signer.publicKey(), hash: transaction.hash().toString('hex'), xdr: transaction.toXDR(), sequence, maxTimeSeconds };
  }

  private requestDoc(plan: Plan): JsonObject {
    return {
      network: 'STELLAR',
      idempotencyKey: plan.idempotencyKey,
      asset: plan.assetName,
      amount: plan.amountText,
      destination: plan.destination,
      memo: plan.memo,
      createdAtMs: this.options.clock.nowMs(),
    };
  }

  private sameRequest(doc: JsonObject, plan: Plan): boolean {
    return doc.asset === plan.assetName && doc.amount === plan.amountText && doc.destination === plan.destination && doc.memo === plan.memo;
  }

  private async loadAttempts(plan: Plan, first: JsonObject): Promise<Attempt[]> {
    const firstAttempt = readAttempt(first, 1);
    if (firstAttempt === null) throw new Error('malformed Stellar send journal record');
    const attempts = [firstAttempt];
    for (let number = 2; number <= sendAttemptsMax; number += 1) {
      const doc = await this.options.journal.get(`${plan.journalKey}#${number}`);
      if (doc === null) break;
      const attempt = readAttempt(doc, number);
      if (attempt === null) throw new Error(`malformed Stellar send journal record for attempt ${number}`);
      attempts.push(attempt);
    }
    return attempts;
  }
}

/**
 * A minTime in 1970–1973 (always in the past) derived from the key and the attempt number. Two sends
 * with the same destination, amount, memo, sequence number and second would otherwise be the very
 * same bytes — one hash for two keys, so one transfer would confirm both. With it they differ.
 */
function keyedMinTime(idempotencyKey: string, attempt: number): number {
  const digest = createHash('sha256').update(`${attempt}:${idempotencyKey}`).digest();
  return 1 + (digest.readUInt32BE(0) % 100_000_000);
}

function attemptDoc(attempt: Attempt): JsonObject {
  return { attempt: attempt.number, source: attempt.source, hash: attempt.hash, xdr: attempt.xdr, sequence: attempt.sequence.toString(), maxTimeSeconds: attempt.maxTimeSeconds };
}

function readAttempt(doc: JsonObject, number: number): Attempt | null {
  const { source, hash, xdr: envelope, sequence, maxTimeSeconds } = doc;
  if (typeof source !== 'string' || typeof hash !== 'string' || typeof envelope !== 'string' || typeof sequence !== 'string' || !/^\d{1,20}$/.test(sequence)) return null;
  if (typeof maxTimeSeconds !== 'number') return null;
  return { number, source, hash, xdr: envelope, sequence: BigInt(sequence), maxTimeSeconds };
}

function resultOf(doc: JsonObject): SendResult {
  if (doc.status === 'confirmed' && typeof doc.onChainId === 'string') return { status: 'confirmed', onChainId: doc.onChainId };
  if (doc.status === 'failed' && typeof doc.reason === 'string') return failed(doc.reason, false);
  throw new Error('malformed Stellar send outcome record');
}
