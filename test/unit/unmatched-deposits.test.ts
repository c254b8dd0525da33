// Unmatched deposits a partner decides on (docs/unmatched-deposits.md): the pure rules
// (src/domain/unmatched-deposits.ts) and the deposit actor applying them, command by command — a
// late deposit handed back is held for its partner, refunded once however often (or however
// concurrently) the partner asks, refunded by the hold's timer when nobody decides, applied to a
// new transaction; dust is never refunded; another partner can do nothing with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { depositBehavior, type DepositActorState } from '../../src/actors/deposit-actor.ts';
import type { CommandEnvelope, JsonValue, Outcome } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { unmatchedDepositId, unmatchedDepositsCollection } from '../../src/actors/unmatched-documents.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { applyMismatch, decideApply, decideRefund, initialRefund, unmatchedStateOf } from '../../src/domain/unmatched-deposits.ts';
import { handleCommand } from '../support/handle-command.ts';

const holdMs = 72 * 3_600_000;
const behavior = depositBehavior({ limits: () => defaultLimitsConfig, unmatchedHoldMs: () => holdMs });
const key = 'SOLANA:sig-1';
const expiredId = '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f';
const newId = '11111111-2222-4333-8444-555555555555';
const partner = 'acme';
const t0 = 1_000;

function transfer(amount: string): JsonValue {
  return toJsonValue({ network: 'SOLANA', onChainId: 'sig-1', asset: 'USDC', amount: decimalFromExactString(amount), sender: 'SenderWallet', memo: null });
}

let commands = 0;
function handle(state: DepositActorState | null, kind: string, payload: JsonValue, nowMs = t0): Outcome<DepositActorState> {
  commands += 1;
  const envelope: CommandEnvelope = { commandId: `c-${commands}`, actorType: 'deposit', actorKey: key, kind, payload, sentAtMs: 1 };
  return handleCommand(behavior, state, envelope, { nowMs, commandId: envelope.commandId });
}

/** A transfer claimed by a transaction that then handed it back as late (with its partner). */
function lateDeposit(amount = '2'): Outcome<DepositActorState> {
  const claimed = handle(null, 'claim', toJsonValue({ transactionId: expiredId, transfer: transfer(amount) }));
  assert.ok(claimed.state);
  return handle(claimed.state, 'handBack', { transactionId: expiredId, reason: 'deposit_late', partnerId: partner });
}

function unmatchedDoc(outcome: Outcome<DepositActorState>): Record<string, JsonValue> {
  const write = outcome.readModels?.find((candidate) => candidate.collection === unmatchedDepositsCollection);
  assert.ok(write, 'an unmatched_deposits document is written');
  return write.doc as Record<string, JsonValue>;
}

test('rules: the partner-visible state; who is held, refunded at once or withheld', () => {
  assert.equal(unmatchedStateOf('held', null), 'open');
  assert.equal(unmatchedStateOf('withheld', null), 'open');
  assert.equal(unmatchedStateOf('pending', null), 'refunding');
  assert.equal(unmatchedStateOf('settled', null), 'refunded');
  assert.equal(unmatchedStateOf('none', newId), 'applied');
  assert.equal(initialRefund(partner, false), 'held');
  assert.equal(initialRefund(null, false), 'pending');
  assert.equal(initialRefund(partner, true), 'withheld');
  assert.equal(initialRefund(null, true), 'withheld');
});

test('rules: refund and apply by the partner only, from open only; dust is not refunded but can be applied', () => {
  const open = { partnerId: partner, refund: 'held' as const, appliedTo: null };
  assert.deepEqual(decideRefund(open, partner), { kind: 'refund' });
  assert.deepEqual(decideRefund(open, 'globex'), { kind: 'refused', code: 'not_found' });
  assert.deepEqual(decideRefund({ ...open, partnerId: null }, partner), { kind: 'refused', code: 'not_found' });
  assert.deepEqual(decideRefund({ ...open, refund: 'pending' }, partner), { kind: 'already' });
  assert.deepEqual(decideRefund({ ...open, refund: 'settled' }, partner), { kind: 'already' });
  assert.deepEqual(decideRefund({ ...open, refund: 'withheld' }, partner), { kind: 'refused', code: 'refund_withheld' });
  assert.deepEqual(decideRefund({ ...open, refund: 'none', appliedTo: newId }, partner), { kind: 'refused', code: 'unmatched_deposit_not_open' });
  assert.deepEqual(decideApply(open, partner, newId), { kind: 'apply' });
  assert.deepEqual(decideApply({ ...open, refund: 'withheld' }, partner, newId), { kind: 'apply' });
  assert.deepEqual(decideApply(open, 'globex', newId), { kind: 'refused', code: 'not_found' });
  assert.deepEqual(decideApply({ ...open, refund: 'pending' }, partner, newId), { kind: 'refused', code: 'unmatched_deposit_not_open' });
  assert.deepEqual(decideApply({ ...open, refund: 'none', appliedTo: newId }, partner, newId), { kind: 'already' });
  assert.deepEqual(decideApply({ ...open, refund: 'none', appliedTo: newId }, partner, expiredId), { kind: 'refused', code: 'unmatched_deposit_not_open' });
});

test('rules: a deposit funds only a payout quote on its network and asset for exactly its amount', () => {
  const deposit = { network: 'SOLANA', asset: 'USDC', amount: decimalFromExactString('12.6') } as const;
  const quote = { direction: 'payout', network: 'SOLANA', cryptoCurrency: 'USDC', sourceAmount: decimalFromExactString('12.600000') } as const;
  assert.equal(applyMismatch(deposit, quote), null, 'the same amount at another scale is the same amount');
  assert.match(applyMismatch(deposit, { ...quote, sourceAmount: decimalFromExactString('12.61') }) ?? '', /amount/);
  assert.match(applyMismatch(deposit, { ...quote, network: 'CELO' }) ?? '', /CELO/);
  assert.match(applyMismatch(deposit, { ...quote, direction: 'onramp' }) ?? '', /payout/);
});

test('a late deposit handed back is held open for its partner: no refund row, a hold, a document the partner can read', () => {
  const outcome = lateDeposit();
  assert.deepEqual(outcome.reply, { result: 'recorded', refund: 'held' });
  assert.equal(outcome.outbox, undefined, 'nothing is refunded before the partner decides or the hold ends');
  assert.ok(outcome.state);
  assert.equal(behavior.timerAtMs?.(outcome.state), t0 + holdMs);
  const doc = unmatchedDoc(outcome);
  assert.deepEqual(
    [doc['id'], doc['owner'], doc['state'], doc['reason'], doc['transactionId'], doc['amount'], doc['sender'], doc['holdEndsAtMs']],
    [unmatchedDepositId(key), partner, 'open', 'deposit_late', expiredId, '2', 'SenderWallet', t0 + holdMs],
  );
});

test('a refund asked twice (or twice at once: the actor applies one after the other) writes one refund row', () => {
  const held = lateDeposit().state;
  assert.ok(held);
  const first = handle(held, 'refund', { partnerId: partner }, t0 + 10);
  assert.equal(first.outbox?.length, 1);
  const row = first.outbox?.[0]?.payload as Record<string, JsonValue>;
  assert.deepEqual([row['type'], row['settleTo']], ['RefundRequested', { actorType: 'deposit', actorKey: key }]);
  assert.ok(first.state);
  assert.equal((first.reply as { deposit: Record<string, JsonValue> }).deposit['state'], 'refunding');
  assert.equal(behavior.timerAtMs?.(first.state), null, 'the hold is over');
  const second = handle(first.state, 'refund', { partnerId: partner }, t0 + 11);
  assert.deepEqual([second.outbox, second.state], [undefined, undefined]);
  assert.equal((second.reply as { deposit: Record<string, JsonValue> }).deposit['state'], 'refunding');
  // The hold's timer, had it been in flight, starts nothing either.
  assert.deepEqual(handle(first.state, 'timer', null, t0 + holdMs), {});
  const settled = handle(first.state, 'refundSettled', { refundOnChainId: 'refund-sig' });
  assert.deepEqual([unmatchedDoc(settled)['state'], unmatchedDoc(settled)['refundOnChainId']], ['refunded', 'refund-sig']);
  // Another partner gets not_found, whatever the state.
  assert.deepEqual(handle(held, 'refund', { partnerId: 'globex' }).reply, { result: 'rejected', code: 'not_found' });
});

test('the hold ends with no decision: the timer refunds it through the same refund row; early, it does nothing', () => {
  const held = lateDeposit().state;
  assert.ok(held);
  assert.deepEqual(handle(held, 'timer', null, t0 + holdMs - 1), {});
  const ended = handle(held, 'timer', null, t0 + holdMs);
  assert.equal(ended.outbox?.length, 1);
  assert.equal(unmatchedDoc(ended)['state'], 'refunding');
  // The partner's refund afterwards is a harmless repeat.
  assert.ok(ended.state);
  assert.equal(handle(ended.state, 'refund', { partnerId: partner }).outbox, undefined);
});

test('apply links the transfer to the new transaction and tells it; a refund after is refused; a repeat re-tells it', () => {
  const held = lateDeposit().state;
  assert.ok(held);
  assert.deepEqual(handle(held, 'apply', { partnerId: 'globex', transactionId: newId }).reply, { result: 'rejected', code: 'not_found' });
  const applied = handle(held, 'apply', { partnerId: partner, transactionId: newId }, t0 + 5);
  assert.equal(applied.outbox, undefined, 'no refund, no new transfer');
  assert.deepEqual(applied.send?.map((command) => [command.actorType, command.actorKey, command.kind]), [['transaction', newId, 'DepositDetected']]);
  const doc = unmatchedDoc(applied);
  assert.deepEqual([doc['state'], doc['appliedTo'], doc['reason'], doc['transactionId'], doc['holdEndsAtMs']], ['applied', newId, 'deposit_late', expiredId, null]);
  assert.ok(applied.state);
  assert.equal(behavior.timerAtMs?.(applied.state), null);
  assert.deepEqual(handle(applied.state, 'refund', { partnerId: partner }).reply, { result: 'rejected', code: 'unmatched_deposit_not_open' });
  assert.deepEqual(handle(applied.state, 'apply', { partnerId: partner, transactionId: expiredId }).reply, { result: 'rejected', code: 'unmatched_deposit_not_open' });
  const again = handle(applied.state, 'apply', { partnerId: partner, transactionId: newId });
  assert.equal(again.state, undefined);
  assert.equal(again.send?.length, 1);
  // The expired transaction can no longer claim it; the new one already has it.
  assert.equal((handle(applied.state, 'claim', toJsonValue({ transactionId: expiredId, transfer: transfer('2') })).reply as { result: string }).result, 'refused');
  // Were the new transaction to refuse it, it would be open for the partner again: never lost.
  const back = handle(applied.state, 'handBack', { transactionId: newId, reason: 'too_many_deposits', partnerId: partner });
  assert.equal(unmatchedDoc(back)['state'], 'open');
});

test('dust stays open: a refund is refused (refund_withheld), no hold timer, and it can still be applied', () => {
  const dust = lateDeposit('0.5');
  assert.deepEqual(dust.reply, { result: 'recorded', refund: 'withheld' });
  assert.ok(dust.state);
  assert.equal(behavior.timerAtMs?.(dust.state), null);
  assert.deepEqual([unmatchedDoc(dust)['state'], unmatchedDoc(dust)['refundFloor']], ['open', '1.0000000']);
  assert.deepEqual(handle(dust.state, 'refund', { partnerId: partner }).reply, { result: 'rejected', code: 'refund_withheld' });
  assert.equal(unmatchedDoc(handle(dust.state, 'apply', { partnerId: partner, transactionId: newId }))['state'], 'applied');
});

test('a deposit no partner can be named for is refunded at once, as before, and no partner can act on it', () => {
  const outcome = handle(null, 'unmatched', toJsonValue({ transfer: transfer('2'), reason: 'memo_unknown' }));
  assert.deepEqual(outcome.reply, { result: 'recorded', refund: 'pending' });
  assert.equal(outcome.outbox?.length, 1);
  const doc = unmatchedDoc(outcome);
  assert.deepEqual([doc['owner'], doc['partnerId'], doc['state']], ['', null, 'refunding']);
  assert.ok(outcome.state);
  assert.deepEqual(handle(outcome.state, 'refund', { partnerId: partner }).reply, { result: 'rejected', code: 'not_found' });
});
