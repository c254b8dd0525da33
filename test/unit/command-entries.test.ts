// Command entries on the wire (src/actors/codec.ts): the commands for one shard's stream go out
// batched in one entry (a JSON array of envelopes, at most `batchRequestsMax`), a lone one as a
// plain envelope, and the shard worker reads every form back in order, refusing what is neither.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchRequestsMax, headerBatchCount } from '../../src/bus/request-reply.ts';
import { batchesOfCommands, commandEntries, decodeEntryEnvelopes, entryCommandCount } from '../../src/actors/codec.ts';
import type { BusEntry } from '../../src/bus/bus.ts';
import type { CommandEnvelope } from '../../src/actors/envelope.ts';

function envelope(actorKey: string, index: number): CommandEnvelope {
  return { commandId: `c-${actorKey}-${index}`, actorType: 'tally', actorKey, kind: 'add', payload: { index }, sentAtMs: 1_700_000_000_000 };
}

const streamOf = (command: CommandEnvelope): string => `cmd:{${command.actorKey}}`;

test('commands for one stream share an entry, in order; a lone command stays a plain envelope', () => {
  const commands = [envelope('a', 0), envelope('b', 0), envelope('a', 1), envelope('a', 2)];
  const entries = commandEntries(commands, streamOf);
  assert.deepEqual(entries.map(({ stream, count }) => [stream, count]), [['cmd:{a}', 3], ['cmd:{b}', 1]]);
  assert.deepEqual(decodeEntryEnvelopes(entries[0]?.payload ?? ''), [commands[0], commands[2], commands[3]]);
  assert.equal(entries[1]?.payload.startsWith('{'), true, 'readable as the one envelope it is');
  assert.deepEqual(decodeEntryEnvelopes(entries[1]?.payload ?? ''), [commands[1]]);
});

test('more commands for one stream than an entry holds are split into entries that keep their order', () => {
  const commands = Array.from({ length: batchRequestsMax * 2 + 1 }, (_, index) => envelope('hot', index));
  const entries = commandEntries(commands, streamOf);
  assert.deepEqual(entries.map((entry) => entry.count), [batchRequestsMax, batchRequestsMax, 1]);
  assert.deepEqual(entries.flatMap((entry) => decodeEntryEnvelopes(entry.payload) ?? []), commands);
});

test('an entry that is not an envelope nor a batch of 1 to 64 of them is refused whole; a bad item alone', () => {
  const good = envelope('a', 0);
  for (const payload of ['not json', '[]', '"text"', '{"commandId":""}', JSON.stringify(Array.from({ length: batchRequestsMax + 1 }, () => good))]) {
    assert.equal(decodeEntryEnvelopes(payload), null, payload.slice(0, 40));
  }
  assert.deepEqual(decodeEntryEnvelopes(JSON.stringify([good, { commandId: 'x' }, [good]])), [good, null, null]);
});

test('a read is cut into batches of at most the batch size in commands, in order, never splitting an entry', () => {
  const entry = (id: string, count: number): BusEntry => ({
    stream: 's',
    id,
    payload: '',
    headers: count > 1 ? { [headerBatchCount]: String(count) } : {},
    deliveryCount: 1,
  });
  const entries = [entry('1', 64), entry('2', 64), entry('3', 1), entry('4', 64), entry('5', 10)];
  const batches = batchesOfCommands(entries, 128);
  assert.deepEqual(batches.map((batch) => batch.map((item) => item.id)), [['1', '2'], ['3', '4', '5']]);
  assert.deepEqual(batchesOfCommands(entries, 10).map((batch) => batch.length), [1, 1, 1, 1, 1], 'an entry over the size is a batch of its own');
  // A header that lies is held to 1…64: it cannot make a batch unbounded or empty.
  assert.equal(entryCommandCount(entry('x', 1)), 1);
  assert.equal(entryCommandCount({ ...entry('y', 1), headers: { [headerBatchCount]: '100000' } }), 64);
  assert.equal(entryCommandCount({ ...entry('z', 1), headers: { [headerBatchCount]: 'many' } }), 1);
  assert.deepEqual(batchesOfCommands([], 512), []);
});
