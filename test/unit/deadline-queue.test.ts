// The timeout queue behind the edge's body-read and handler timeouts and the requester's reply
// timeouts: one timer for many items of the same duration. Driven by mocked timers and clock.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { DeadlineLink, DeadlineQueue } from '../../src/bus/deadline-queue.ts';

class Item extends DeadlineLink {
  constructor(readonly name: string) {
    super();
  }
}

/** A queue of named items that records the names of those that expire. */
function namedQueue(durationMs: number, clock: () => number, onExpired?: (item: Item) => void): { queue: DeadlineQueue<Item>; expired: string[]; item: (name: string) => Item } {
  const expired: string[] = [];
  const items = new Map<string, Item>();
  const queue = new DeadlineQueue<Item>(durationMs, (item) => {
    expired.push(item.name);
    onExpired?.(item);
  }, clock);
  const item = (name: string): Item => {
    let found = items.get(name);
    if (found === undefined) {
      found = new Item(name);
      items.set(name, found);
    }
    return found;
  };
  return { queue, expired, item };
}

function fakeTime(t: TestContext): { clock: () => number; tick: (ms: number) => void } {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
  return { clock: () => Date.now(), tick: (ms) => t.mock.timers.tick(ms) };
}

test('items expire in the order they were added, each after its own duration, not before', (t) => {
  const { clock, tick } = fakeTime(t);
  const { queue, expired, item } = namedQueue(100, clock);
  queue.add(item('a'));
  tick(40);
  queue.add(item('b'));
  tick(59);
  assert.deepEqual(expired, []);
  tick(1);
  assert.deepEqual(expired, ['a']);
  tick(39);
  assert.deepEqual(expired, ['a']);
  tick(1);
  assert.deepEqual(expired, ['a', 'b']);
  assert.equal(queue.size, 0);
});

test('a deleted item never expires, and the others (before and after it) still do on time', (t) => {
  const { clock, tick } = fakeTime(t);
  const { queue, expired, item } = namedQueue(100, clock);
  queue.add(item('first'));
  queue.add(item('finished in time'));
  tick(10);
  queue.add(item('slow'));
  assert.equal(queue.delete(item('finished in time')), true);
  assert.equal(queue.delete(item('finished in time')), false);
  assert.equal(queue.size, 2);
  tick(90);
  assert.deepEqual(expired, ['first']);
  tick(9);
  assert.deepEqual(expired, ['first']);
  tick(1);
  assert.deepEqual(expired, ['first', 'slow']);
});

test('adding an item again restarts its countdown', (t) => {
  const { clock, tick } = fakeTime(t);
  const { queue, expired, item } = namedQueue(100, clock);
  queue.add(item('x'));
  queue.add(item('y'));
  tick(80);
  queue.add(item('x'));
  assert.equal(queue.size, 2);
  tick(20);
  assert.deepEqual(expired, ['y']);
  tick(79);
  assert.deepEqual(expired, ['y']);
  tick(1);
  assert.deepEqual(expired, ['y', 'x']);
});

test('an item added while others expire gets a full duration; everything already due expires together', (t) => {
  const { clock, tick } = fakeTime(t);
  const queued: ReturnType<typeof namedQueue> = namedQueue(50, clock, (expiredItem) => {
    if (expiredItem.name === 'first') queued.queue.add(queued.item('added on expiry'));
  });
  const { queue, expired, item } = queued;
  queue.add(item('first'));
  queue.add(item('second'));
  tick(50);
  assert.deepEqual(expired, ['first', 'second']);
  tick(49);
  assert.deepEqual(expired, ['first', 'second']);
  tick(1);
  assert.deepEqual(expired, ['first', 'second', 'added on expiry']);
});

test('clear forgets everything and disarms the timer; the queue works again afterwards', (t) => {
  const { clock, tick } = fakeTime(t);
  const { queue, expired, item } = namedQueue(10, clock);
  for (let index = 0; index < 1_000; index += 1) queue.add(item(`n${index}`));
  queue.clear();
  assert.equal(queue.size, 0);
  tick(1_000);
  assert.deepEqual(expired, []);
  queue.add(item('n7'));
  tick(10);
  assert.deepEqual(expired, ['n7']);
});

test('an item waits in one queue at a time', (t) => {
  const { clock } = fakeTime(t);
  const first = namedQueue(10, clock);
  const second = new DeadlineQueue<Item>(10, () => undefined, clock);
  const shared = first.item('shared');
  first.queue.add(shared);
  assert.throws(() => second.add(shared), /another deadline queue/);
  assert.equal(second.delete(shared), false);
  first.queue.delete(shared);
  second.add(shared);
  assert.equal(second.size, 1);
});

test('a negative or non-finite duration is refused', () => {
  assert.throws(() => new DeadlineQueue<Item>(-1, () => undefined), RangeError);
  assert.throws(() => new DeadlineQueue<Item>(Number.NaN, () => undefined), RangeError);
});
