// The commands of one actor write travel in command-batch rows of up to 64 envelopes (one row for
// a transaction's four asks, where there were four), other topics' rows untouched; the relay reads
// both the batch rows and the one-command rows earlier releases wrote, and refuses anything else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commandsPerRowMax, outboxTopicCommandBatches, outboxTopicCommands, withCommandBatches } from '../../src/actors/actor-step.ts';
import { envelopesOfRow, isCommandRow } from '../../src/actors/command-relay.ts';
import type { JsonValue, OutboxMessage } from '../../src/actors/envelope.ts';

const envelope = (index: number): JsonValue => ({ commandId: `c>${index}`, actorType: 'counter', actorKey: `k-${index}`, kind: 'reserve', payload: null, sentAtMs: 1 });
const command = (index: number): OutboxMessage => ({ topic: outboxTopicCommands, payload: envelope(index) });
const webhook: OutboxMessage = { topic: 'webhooks', payload: { event: 'transaction.created' }, partitionKey: 'tx-1' };

test('a write\'s commands become one batch row (in order); its other rows stay as they were', () => {
  const rows = withCommandBatches([command(0), webhook, command(1), command(2), command(3)]);
  assert.deepEqual(rows, [webhook, { topic: outboxTopicCommandBatches, payload: [envelope(0), envelope(1), envelope(2), envelope(3)] }]);
  assert.deepEqual(withCommandBatches([webhook]), [webhook], 'no command, no batch row');
});

test(`more than ${commandsPerRowMax} commands take as many rows as needed, none over the bound`, () => {
  const rows = withCommandBatches(Array.from({ length: commandsPerRowMax * 2 + 1 }, (_, index) => command(index)));
  assert.deepEqual(rows.map((row) => (row.payload as JsonValue[]).length), [commandsPerRowMax, commandsPerRowMax, 1]);
  assert.deepEqual(rows.flatMap((row) => row.payload as JsonValue[]), Array.from({ length: commandsPerRowMax * 2 + 1 }, (_, index) => envelope(index)));
});

test('the relay reads a batch row and an older one-command row; an unreadable item is dropped alone, never with its row', () => {
  const batch = { id: 'a:1:0', topic: outboxTopicCommandBatches, payload: [envelope(0), envelope(1)] };
  const single = { id: 'a:2:0', topic: outboxTopicCommands, payload: envelope(2) };
  assert.deepEqual([isCommandRow(batch), isCommandRow(single), isCommandRow({ id: 'a:3:0', topic: 'webhooks', payload: null })], [true, true, false]);
  const ids = (row: Parameters<typeof envelopesOfRow>[0]) => {
    const carried = envelopesOfRow(row);
    return [carried.envelopes.map((item) => item.commandId), carried.unreadable];
  };
  assert.deepEqual(ids(batch), [['c>0', 'c>1'], 0]);
  assert.deepEqual(ids(single), [['c>2'], 0]);
  // One corrupt item among a refusal's releases: the others still go out.
  assert.deepEqual(ids({ id: 'b', topic: outboxTopicCommandBatches, payload: [envelope(0), { not: 'an envelope' }, envelope(2)] }), [['c>0', 'c>2'], 1]);
  for (const payload of [[], envelope(0), Array.from({ length: commandsPerRowMax + 1 }, (_, index) => envelope(index))]) {
    assert.deepEqual(ids({ id: 'bad', topic: outboxTopicCommandBatches, payload }), [[], 1], JSON.stringify(payload).slice(0, 60));
  }
  assert.deepEqual(ids({ id: 'bad', topic: outboxTopicCommands, payload: [envelope(0)] }), [[], 1], 'a one-command row holds one envelope');
});
