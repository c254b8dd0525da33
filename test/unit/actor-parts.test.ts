// The pure pieces of actor parts (src/actors/actor-parts.ts): which records a write writes, and
// record ids that always fit the store's identifier bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { actorPartId, actorPartsCollection, partText, partWrites, partsArray } from '../../src/actors/actor-parts.ts';
import { identifierBytesMax } from '../../src/store/store.ts';

test('a write writes the parts whose text changed, deletes those that became empty, and nothing else', () => {
  const stored = ['a', '', 'c', 'd'];
  const wanted = ['a', 'b', 'c2', ''];
  assert.deepEqual(partWrites('shelf/x', stored, wanted), [
    { collection: actorPartsCollection, id: 'shelf/x#1', doc: { text: 'b' } },
    { collection: actorPartsCollection, id: 'shelf/x#2', doc: { text: 'c2' } },
    { collection: actorPartsCollection, id: 'shelf/x#3', doc: null },
  ]);
  assert.deepEqual(partWrites('shelf/x', wanted, wanted), []);
  assert.deepEqual(partWrites('shelf/x', [], ['', 'b']), [{ collection: actorPartsCollection, id: 'shelf/x#1', doc: { text: 'b' } }], 'a new actor writes its non-empty parts');
  assert.deepEqual(partsArray(new Map([[2, 'c'], [0, 'a']])), ['a', '', 'c']);
});

test('a part id fits the store whatever the actor id: readable when it can be, a digest of the actor id when not', () => {
  assert.equal(actorPartId('counter/limits:method-day:BREB:2026-11-26', 12), 'counter/limits:method-day:BREB:2026-11-26#12');
  // An actor id at the bound was valid before parts (a user's counter with a long user id).
  const longest = `counter/${'u'.repeat(identifierBytesMax - 'counter/'.length)}`;
  const id = actorPartId(longest, 63);
  assert.ok(Buffer.byteLength(id) <= identifierBytesMax, id);
  assert.match(id, /^#[0-9a-f]{64}#63$/);
  assert.equal(actorPartId(longest, 63), id, 'the same id every time');
  assert.notEqual(actorPartId(`${longest.slice(0, -1)}v`, 63), id);
  const multibyte = `counter/${'é'.repeat(124)}`;
  assert.ok(Buffer.byteLength(actorPartId(multibyte, 9)) <= identifierBytesMax);
});

test('a part record missing or of another shape is refused, not read as empty', () => {
  assert.equal(partText({ text: 'o 1.00 tx' }, 'a#1'), 'o 1.00 tx');
  assert.throws(() => partText(null, 'a#1'), /missing/);
  assert.throws(() => partText({ text: '' }, 'a#1'), /no text/);
  assert.throws(() => partText({ lines: 'x' }, 'a#1'), /no text/);
});
