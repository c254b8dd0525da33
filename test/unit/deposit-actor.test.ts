// The deposit actor's pure handling of what happens to a transfer its transaction refused (a hand
// back: beyond the stray slots, or dust) and of unmatched deposits below the refund floor: what
// operations see in the `deposits` read model and which refund rows are written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { depositBehavior, type DepositActorState } from '../../src/actors/deposit-actor.ts';
import type { CommandEnvelope, JsonValue, Outcome } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { handleCommand } from '../support/handle-command.ts';

const behavior = depositBehavior({ limits: () => defaultLimitsConfig });
const key = 'SOLANA:sig-1';
const transactionId = '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f';

function transfer(amount: string): JsonValue {
  return toJsonValue({ network: 'SOLANA', onChainId: 'sig-1', asset: 'USDC', amount: decimalFromExactString(amount), sender: 'SenderWallet', memo: null });
}

function handle(state: DepositActorState | null, kind: string, payload: JsonValue): Outcome<DepositActorState> {
  const envelope: CommandEnvelope = { commandId: `c-${kind}`, actorType: 'deposit', actorKey: key, kind, payload, sentAtMs: 1 };
  return handleCommand(behavior, state, envelope, { nowMs: 1_000, commandId: envelope.commandId });
}

function linked(amount: string): DepositActorState {
  const claimed = handle(null, 'claim', toJsonValue({ transactionId, transfer: transfer(amount) }));
  assert.ok(claimed.state);
  return claimed.state;
}

test('a transfer handed back as too many deposits becomes unmatched and gets a refund row (above the floor)', () => {
  const outcome = handle(linked('2'), 'handBack', { transactionId, reason: 'too_many_deposits' });
  assert.deepEqual(outcome.reply, { result: 'recorded', refund: 'pending' });
  assert.equal(outcome.outbox?.length, 1);
  const row = outcome.outbox?.[0]?.payload as Record<string, JsonValue>;
  assert.deepEqual([row['type'], row['reason'], row['settleTo']], ['RefundRequested', 'too_many_deposits', { actorType: 'deposit', actorKey: key }]);
  const doc = outcome.readModels?.[0]?.doc as Record<string, JsonValue>;
  assert.deepEqual(
    [doc['status'], doc['unmatchedReason'], doc['transactionId'], doc['refund'], doc['refundFloor']],
    ['unmatched', 'too_many_deposits', transactionId, 'pending', null],
  );
});

test('dust handed back (or beyond the slots) is recorded as withheld, with its floor, and no refund row', () => {
  for (const reason of ['below_refund_floor', 'too_many_deposits']) {
    const outcome = handle(linked('0.999999'), 'handBack', { transactionId, reason });
    assert.deepEqual(outcome.reply, { result: 'recorded', refund: 'withheld' });
    assert.equal(outcome.outbox, undefined);
    const doc = outcome.readModels?.[0]?.doc as Record<string, JsonValue>;
    assert.deepEqual([doc['status'], doc['unmatchedReason'], doc['refund'], doc['refundFloor']], ['unmatched', reason, 'withheld', '1.0000000']);
    // Nobody can settle a refund that was never made.
    assert.ok(outcome.state);
    assert.deepEqual(handle(outcome.state, 'refundSettled', { refundOnChainId: 'r' }).reply, { result: 'rejected', code: 'refund_withheld' });
  }
});

test('only the transaction the transfer is linked to can hand it back; a repeat changes nothing', () => {
  const state = linked('2');
  const other = handle(state, 'handBack', { transactionId: '11111111-2222-4333-8444-555555555555', reason: 'too_many_deposits' });
  assert.deepEqual(other.reply, { result: 'refused', linkedTo: transactionId, reason: 'linked_elsewhere' });
  assert.equal(other.state, undefined);
  const first = handle(state, 'handBack', { transactionId, reason: 'too_many_deposits' });
  assert.ok(first.state);
  const again = handle(first.state, 'handBack', { transactionId, reason: 'too_many_deposits' });
  assert.deepEqual([again.reply, again.state, again.outbox], [{ result: 'alreadyRecorded' }, undefined, undefined]);
  assert.deepEqual(handle(null, 'handBack', { transactionId, reason: 'too_many_deposits' }).reply, { result: 'rejected', code: 'not_found' });
  // An unknown reason never reaches the actor: its command map refuses it on arrival.
  assert.throws(() => handle(state, 'handBack', { transactionId, reason: 'bored' }), /malformed: reason/);
  // After the hand-back no transaction can claim it.
  assert.deepEqual(handle(first.state, 'claim', toJsonValue({ transactionId, transfer: transfer('2') })).reply, { result: 'refused', linkedTo: null, reason: 'unmatched' });
});

test('an unmatched deposit is refunded at the floor exactly, withheld one base unit below it', () => {
  const atFloor = handle(null, 'unmatched', toJsonValue({ transfer: transfer('1'), reason: 'memo_missing' }));
  assert.deepEqual(atFloor.reply, { result: 'recorded', refund: 'pending' });
  assert.equal(atFloor.outbox?.length, 1);
  const below = handle(null, 'unmatched', toJsonValue({ transfer: transfer('0.999999'), reason: 'memo_missing' }));
  assert.deepEqual(below.reply, { result: 'recorded', refund: 'withheld' });
  assert.equal(below.outbox, undefined);
  assert.equal((below.readModels?.[0]?.doc as Record<string, JsonValue>)['unmatchedReason'], 'memo_missing');
});
