// Command entries on the wire (src/actors/codec.ts): the commands for one shard's stream go out
// batched in one entry (a JSON array of envelopes, at most `batchRequestsMax`), a lone one as a
// plain envelope, and the shard worker reads every form back in order, refusing what is neither.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchRequestsMax } from '../../src/bus/request-reply.ts';
import { commandEntries, decodeEntryEnvelopes } from '../../src/actors/codec.ts';
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
