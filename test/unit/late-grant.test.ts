// A grant that reaches a transaction after its saga refused: a `reserve` (or the quote's `claim`)
// delivered again so late that the counter's dedupe log and its bounded tombstones forgot it is
// counted again and granted to a transaction that is already 'rejected'. The transaction gives it
// back (a `release` to that counter, or to the quote); a live transaction holds its windows and
// sends nothing, unless it released them since (expired, failed): then it gives a counter's grant
// back too; a rejected state stored before it kept its keys decodes and ignores the grant.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { counterBehavior, reservationResultKind, type CounterWindow, type ReservationOutcome } from '../../src/actors/counter-actor.ts';
import { sentCommands } from '../../src/actors/actor-step.ts';
import type { CommandEnvelope, CommandToSend, JsonValue, Outcome } from '../../src/actors/envelope.ts';
import { quoteClaimResultKind } from '../../src/actors/quote-actor.ts';
import { fromJsonValue, toJsonValue } from '../../src/actors/state-codec.ts';
import { transactionBehavior, type AcceptPayload, type TransactionActorState } from '../../src/actors/transaction-actor.ts';
import { releasesGrantAfterRelease, windowReservation } from '../../src/domain/acceptance.ts';
import { transactionStatuses } from '../../src/domain/transaction/types.ts';
import { timerCommandKind } from '../../src/actors/envelope.ts';
import { acceptanceCounterKeys, emptyCounter, type CounterState } from '../../src/domain/limits.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { handleCommand } from '../support/handle-command.ts';
import { brebPayoutQuote, pixPayoutQuote } from '../support/quotes.ts';

const t0 = 1_700_000_000_000;
const txId = '5d1c2f0e-7a44-4b9e-8c21-3f6a9b0d4e12';
const brebQuote = brebPayoutQuote(t0);
const pixQuote = pixPayoutQuote(t0);
const behavior = transactionBehavior({ limits: () => defaultLimitsConfig });
const counters = counterBehavior({ limits: () => defaultLimitsConfig });
const keys = acceptanceCounterKeys(defaultLimitsConfig, { partnerId: 'acme', userId: 'user-1', method: 'BREB', nowMs: t0 });

const granted: ReservationOutcome = { ok: true };
const methodCap: ReservationOutcome = { ok: false, rejection: { code: 'method_daily_cap', method: 'BREB' } };

function keyOf(window: CounterWindow): string {
  const key = keys[window];
  assert.ok(key !== null);
  return key;
}

/** One transaction actor, its state round-tripped through the codec after each command, as the runtime stores it. */
class Transaction {
  state: TransactionActorState | null = null;
  private sequence = 0;

  envelope(kind: string, payload: JsonValue, commandId = `c-${(this.sequence += 1)}`): CommandEnvelope {
    return { commandId, actorType: 'transaction', actorKey: txId, kind, payload, sentAtMs: t0 };
  }

  handle(command: CommandEnvelope): Outcome<TransactionActorState> {
    const outcome = handleCommand(behavior, this.state, command, { nowMs: t0, commandId: command.commandId });
    if (outcome.state !== undefined) this.state = behavior.decode(behavior.encode(outcome.state));
    return outcome;
  }

  accept(payload: AcceptPayload): Outcome<TransactionActorState> {
    return this.handle({ ...this.envelope('accept', toJsonValue(payload)), replyTo: { stream: 'reply:edge-1', requestId: 'r-1' } });
  }

  result(step: CounterWindow | 'quote', outcome: ReservationOutcome): CommandEnvelope {
    return step === 'quote'
      ? this.envelope(quoteClaimResultKind, toJsonValue({ outcome }))
      : this.envelope(reservationResultKind, toJsonValue({ window: step, outcome }));
  }

  answer(step: CounterWindow | 'quote', outcome: ReservationOutcome): Outcome<TransactionActorState> {
    return this.handle(this.result(step, outcome));
  }
}

/** A BREB acceptance refused at the method cap: the quote, the user's day and the KYC month granted (and released). */
function rejectedAtMethodCap(): Transaction {
  const transaction = new Transaction();
  transaction.accept(acceptPayload(brebQuote));
  transaction.answer('quote', granted);
  transaction.answer('userDay', granted);
  transaction.answer('kycMonth', granted);
  const refused = transaction.answer('methodDay', methodCap);
  assert.equal(refused.send?.length, 3, 'the quote, the user day and the KYC month released at the refusal');
  assert.equal(transaction.state?.phase, 'rejected');
  return transaction;
}

function live(): Transaction {
  const transaction = new Transaction();
  transaction.accept(acceptPayload(brebQuote));
  for (const step of ['quote', 'methodDay', 'userDay', 'kycMonth'] as const) transaction.answer(step, granted);
  assert.equal(transaction.state?.phase, 'live');
  return transaction;
}

const releaseTo = (window: CounterWindow): CommandToSend => ({
  actorType: 'counter',
  actorKey: keyOf(window),
  kind: 'release',
  payload: { kind: 'release', transactionId: txId },
});

function nothing(outcome: Outcome<TransactionActorState>, what: string): void {
  assert.deepEqual(outcome, {}, `${what}: no state, nothing sent, nobody answered`);
}

describe('a grant that arrives after the saga refused is given back', () => {
  test('a late grant of the window that refused (its counter re-counted the transaction) sends that counter a release for the transaction', () => {
    const transaction = rejectedAtMethodCap();
    const late = transaction.answer('methodDay', granted);
    assert.deepEqual(late.send, [releaseTo('methodDay')]);
    assert.equal(late.state, undefined, 'the rejected state is unchanged');
    assert.deepEqual([late.replies, late.reply], [undefined, undefined], 'nobody is answered again');
  });

  test('a late grant of a window granted and released at the refusal (its tombstone forgotten) is released again', () => {
    const transaction = rejectedAtMethodCap();
    assert.deepEqual(transaction.answer('userDay', granted).send, [releaseTo('userDay')]);
    assert.deepEqual(transaction.answer('kycMonth', granted).send, [releaseTo('kycMonth')]);
  });

  test('a late grant of the quote\'s claim (its claim re-taken once the quote\'s dedupe log forgot it) gives the claim back', () => {
    const transaction = rejectedAtMethodCap();
    const late = transaction.answer('quote', granted);
    assert.deepEqual(late.send, [{ actorType: 'quote', actorKey: brebQuote.id, kind: 'release', payload: { transactionId: txId } }]);
    assert.equal(late.state, undefined);
  });

  test('a transaction refused because it could not be created (the quote expired meanwhile) gives a late grant back too', () => {
    const refused = new Transaction();
    refused.accept(acceptPayload(pixQuote));
    refused.answer('quote', granted);
    // The last counter answers once the quote expired: every step granted, the transaction not created.
    const outcome = handleCommand(behavior, refused.state, refused.result('kycMonth', granted), { nowMs: pixQuote.expiresAtMs, commandId: 'c-late' });
    assert.ok(outcome.state !== undefined && outcome.state.phase === 'rejected');
    refused.state = behavior.decode(behavior.encode(outcome.state));
    const pixKeys = acceptanceCounterKeys(defaultLimitsConfig, { partnerId: 'acme', userId: 'user-1', method: 'PIX', nowMs: t0 });
    assert.deepEqual(refused.answer('kycMonth', granted).send, [
      { actorType: 'counter', actorKey: pixKeys.kycMonth, kind: 'release', payload: { kind: 'release', transactionId: txId } },
    ]);
  });

  test('a late refusal sends nothing: a refused step holds nothing', () => {
    const transaction = rejectedAtMethodCap();
    nothing(transaction.answer('methodDay', methodCap), 'a refusal');
    nothing(transaction.answer('quote', { ok: false, rejection: { code: 'quote_in_use' } }), 'a refused claim');
  });

  test('the same late grant delivered again sends the same release, with the command id derived from the grant\'s (the counter dedupes it; a release is idempotent anyway)', () => {
    const transaction = rejectedAtMethodCap();
    const command = transaction.result('userDay', granted);
    const first = transaction.handle(command);
    const again = transaction.handle(command);
    assert.deepEqual(again, first, 'the same outcome from the same state');
    const sent = sentCommands(command, first.send ?? [], t0).map((message) => fromJsonValue<CommandEnvelope>(message.payload));
    assert.deepEqual(sent.map((envelope) => [envelope.commandId, envelope.actorKey, envelope.kind]), [[`${command.commandId}>0`, keyOf('userDay'), 'release']]);
  });

  test('end to end with the counter: the re-counted reservation is given back and the counter holds nothing for the transaction', () => {
    const transaction = rejectedAtMethodCap();
    // The method counter no longer lists the transaction (its refusal recorded nothing; had it granted,
    // its tombstone would have been dropped by now): the late reserve counts it.
    const reserve = windowReservation(acceptPayload(brebQuote), 'methodDay', txId);
    const counted = handleCommand(counters, emptyCounter(), {
      commandId: 'reserve-1', actorType: 'counter', actorKey: keyOf('methodDay'), kind: 'reserve', payload: toJsonValue({ kind: 'reserve', ...reserve }), sentAtMs: t0,
    }, { nowMs: t0, commandId: 'reserve-1' });
    const held = counted.state as CounterState;
    assert.equal(held.reservedCount, 1, 'counted again');
    const result = counted.send?.[0];
    assert.ok(result !== undefined && result.kind === reservationResultKind && result.actorKey === txId);
    const giveBack = transaction.handle(transaction.envelope(result.kind, result.payload, 'reserve-1>0'));
    const release = giveBack.send?.[0];
    assert.ok(release !== undefined && giveBack.send?.length === 1);
    assert.equal(release.actorKey, keyOf('methodDay'));
    const releaseCommand: CommandEnvelope = { commandId: 'reserve-1>0>0', actorType: 'counter', actorKey: release.actorKey, kind: release.kind, payload: release.payload, sentAtMs: t0 };
    const released = handleCommand(counters, held, releaseCommand, { nowMs: t0, commandId: releaseCommand.commandId }).state as CounterState;
    assert.equal(released.reservedCount, 0, 'the cap is free again');
    assert.equal(released.reservedAmount.units, 0n);
    assert.deepEqual(handleCommand(counters, released, releaseCommand, { nowMs: t0, commandId: 'again' }), {}, 'releasing twice changes nothing');
  });
});

/** A live BREB transaction whose payment window passed: its timer expired it, and it released its windows. */
function expired(): Transaction {
  const transaction = live();
  const state = transaction.state;
  assert.ok(state?.phase === 'live');
  const outcome = handleCommand(behavior, state, transaction.envelope(timerCommandKind, null), { nowMs: state.tx.expiresAtMs, commandId: 'timer-1' });
  assert.ok(outcome.state?.phase === 'live' && outcome.state.tx.status === 'PAYMENT_EXPIRED');
  assert.equal(outcome.send?.filter((command) => command.kind === 'release').length, 3, 'its three windows released at expiry');
  transaction.state = behavior.decode(behavior.encode(outcome.state));
  return transaction;
}

describe('a grant that reaches a transaction after it released its windows is given back', () => {
  test('an expired transaction given a window again (a reserve delivered after its counter forgot it) releases that window', () => {
    const transaction = expired();
    for (const window of ['methodDay', 'userDay', 'kycMonth'] as const) {
      const late = transaction.answer(window, granted);
      assert.deepEqual(late.send, [releaseTo(window)], window);
      assert.equal(late.state, undefined, 'the transaction is unchanged');
    }
  });

  test('an expired transaction ignores a refusal and a repeated claim of its quote (used for good at creation)', () => {
    const transaction = expired();
    nothing(transaction.answer('methodDay', methodCap), 'a refusal');
    nothing(transaction.answer('quote', granted), 'a repeated claim');
  });

  test('the rule: only the statuses reached by releasing give a counter grant back', () => {
    for (const status of transactionStatuses) {
      const expected = status === 'PAYMENT_EXPIRED' || status === 'PAYMENT_FAILED' || status === 'WRONG_AMOUNT';
      assert.equal(releasesGrantAfterRelease(status, 'methodDay', granted), expected, status);
      assert.equal(releasesGrantAfterRelease(status, 'methodDay', methodCap), false, `${status}, refused`);
      assert.equal(releasesGrantAfterRelease(status, 'quote', granted), false, `${status}, the quote`);
    }
  });
});

describe('a grant of a step the running saga recorded as refused is given back', () => {
  test('while the saga waits for its other steps, a re-counted window is released at once and the saga goes on', () => {
    const transaction = new Transaction();
    transaction.accept(acceptPayload(brebQuote));
    transaction.answer('methodDay', methodCap);
    const recount = transaction.answer('methodDay', granted);
    assert.deepEqual(recount.send, [releaseTo('methodDay')]);
    assert.equal(recount.state, undefined, 'the saga is unchanged');
    const claimedAfterAll = transaction.answer('quote', { ok: false, rejection: { code: 'quote_in_use' } });
    assert.equal(claimedAfterAll.send, undefined);
    assert.deepEqual(transaction.answer('quote', granted).send, [{ actorType: 'quote', actorKey: brebQuote.id, kind: 'release', payload: { transactionId: txId } }]);
    // The saga settles as it would have: refused at the method cap, the granted steps released.
    transaction.answer('userDay', granted);
    const settled = transaction.answer('kycMonth', granted);
    assert.equal(transaction.state?.phase, 'rejected');
    assert.deepEqual(settled.send, [releaseTo('userDay'), releaseTo('kycMonth')]);
  });
});

describe('a grant outside a rejected saga is not given back', () => {
  test('a live transaction receiving a duplicate grant of any step sends nothing: it holds those windows and the quote', () => {
    const transaction = live();
    for (const step of ['quote', 'methodDay', 'userDay', 'kycMonth'] as const) nothing(transaction.answer(step, granted), `${step} again`);
  });

  test('a rejected state stored by an earlier release (no keys) still decodes, answers a retried accept, and ignores a late grant', () => {
    const transaction = rejectedAtMethodCap();
    assert.ok(transaction.state?.phase === 'rejected');
    const { reply, ...kept } = transaction.state;
    assert.deepEqual(Object.keys(kept), ['phase', 'asked'], 'a rejected state written now keeps what it asked');
    // The shape an earlier release stored: the phase and the reply, nothing else.
    transaction.state = behavior.decode(toJsonValue({ phase: 'rejected', reply }));
    assert.deepEqual(transaction.state, { phase: 'rejected', reply });
    nothing(transaction.answer('methodDay', granted), 'a late counter grant');
    nothing(transaction.answer('quote', granted), 'a late claim grant');
    assert.deepEqual(transaction.accept(acceptPayload(brebQuote)), { reply }, 'a retried accept gets the stored refusal');
  });

  test('an acceptance refused by a read check asked no step: a grant for it sends nothing', () => {
    const transaction = new Transaction();
    const refused = transaction.accept(acceptPayload(brebQuote, { railAvailable: false }));
    assert.equal(refused.send, undefined);
    assert.equal(transaction.state?.phase, 'rejected');
    nothing(transaction.answer('methodDay', granted), 'a grant never asked');
  });
});
