// The teardown every `after` hook uses: a stop that throws does not skip the stops after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { teardown } from '../support/teardown.ts';

test('every step runs though an earlier one throws; the one failure is rethrown as it was', async () => {
  const ran: string[] = [];
  const failure = new Error('the service did not stop');
  await assert.rejects(teardown(
    () => ran.push('edge'),
    () => { throw failure; },
    async () => { ran.push('redis'); },
  ), (error) => error === failure);
  assert.deepEqual(ran, ['edge', 'redis']);
});

test('several failures are thrown together; a resource never started (undefined) is a no-op step', async () => {
  let redis: { stop(): Promise<void> } | undefined;
  const neverStarted = (): typeof redis => redis;
  await assert.rejects(teardown(
    () => Promise.reject(new Error('a')),
    () => neverStarted()?.stop(),
    () => Promise.reject(new Error('b')),
  ), (error) => error instanceof AggregateError && error.errors.length === 2);
  await teardown(() => neverStarted()?.stop());
});
