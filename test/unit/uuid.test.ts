// The edge's own random UUIDs (request, quote, transaction and command ids): RFC 9562 version 4
// text, lower case, accepted by the domain's id parser, and never repeated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseUuid } from '../../src/domain/ids.ts';
import { randomUuid } from '../../src/edge/uuid.ts';

const version4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('ids are version 4 UUIDs in lower case that the domain accepts as they are', () => {
  for (let index = 0; index < 2_000; index += 1) {
    const id = randomUuid();
    assert.match(id, version4);
    assert.equal(parseUuid(id), id);
  }
});

test('ids do not repeat, across many batches of entropy', () => {
  const seen = new Set<string>();
  for (let index = 0; index < 100_000; index += 1) seen.add(randomUuid());
  assert.equal(seen.size, 100_000);
});

test('every hex digit position varies (no byte of the batch is stuck)', () => {
  const ids = Array.from({ length: 4_000 }, () => randomUuid());
  for (let position = 0; position < 36; position += 1) {
    if ([8, 13, 18, 23, 14].includes(position)) continue; // dashes and the version digit
    const digits = new Set(ids.map((id) => id[position]));
    // The variant digit takes 4 values (8, 9, a, b); every other digit all 16.
    assert.equal(digits.size, position === 19 ? 4 : 16, `position ${position}`);
  }
});
