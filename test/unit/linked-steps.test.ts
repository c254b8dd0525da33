// The pure pieces of linked steps (src/actors/linked-steps.ts): a sender's write without the
// commands its receivers applied in the same commit, and two steps of one actor as one write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { activeActor, buildWrite, sentCommands, type PreparedWrite, type StepBase } from '../../src/actors/actor-step.ts';
import { baseAfter, prepareStep } from '../../src/actors/actor-prepare.ts';
import { commandsSentBy, linkSteps, linkedKey, mergedSteps, withoutLinked, type LinkHost } from '../../src/actors/linked-steps.ts';
import type { ActorBehavior, CommandEnvelope, OutboxMessage, ReadModelWrite } from '../../src/actors/envelope.ts';
import { outboxTopicCommandBatches, commandsPerRowMax } from '../../src/actors/runtime.ts';

interface Note { readonly n: number; readonly dueAtMs: number | null }

const behavior: ActorBehavior<Note> = {
  type: 'note',
  encode: (state) => ({ ...state }),
  decode: (json) => json as unknown as Note,
  handle: () => ({}),
  timerAtMs: (state) => state.dueAtMs,
};

const command = (id: string): CommandEnvelope => ({ commandId: id, actorType: 'note', actorKey: 'a', kind: 'go', payload: null, sentAtMs: 0 });

/** Commands `<from>>0` … sent to `tally/<i>`, as the step's outbox messages. */
function sends(from: string, count: number): OutboxMessage[] {
  return sentCommands(command(from), Array.from({ length: count }, (_, index) => ({ actorType: 'tally', actorKey: `t${index}`, kind: 'add', payload: null })), 0);
}

function step(options: { base?: StepBase | null; state: Note; commandId: string; outbox: OutboxMessage[]; readModels?: ReadModelWrite[] }): PreparedWrite {
  const actor = activeActor('note/a', behavior as ActorBehavior<unknown>, { version: 4, state: { n: 0, dueAtMs: null } }, 0);
  return buildWrite({
    actor, base: options.base ?? null, behavior: behavior as ActorBehavior<unknown>, fence: { shard: 1, token: 1 }, state: options.state, changed: true,
    appliedCommands: [{ commandId: options.commandId, reply: options.state.n }], outbox: options.outbox, readModels: options.readModels ?? [],
    replies: [], refusedTimerAtMs: null,
  });
}

const webhook: OutboxMessage = { topic: 'webhooks', payload: { event: 'x' } };

test("a sender's write loses the linked commands: empty command rows go, the rows left are numbered by position", () => {
  const sender = step({ state: { n: 1, dueAtMs: null }, commandId: 'c1', outbox: [...sends('c1', commandsPerRowMax + 2), webhook] });
  assert.deepEqual(sender.outboxRows.map((row) => row.topic), ['webhooks', outboxTopicCommandBatches, outboxTopicCommandBatches]);
  const sent = commandsSentBy(sender);
  assert.equal(sent.length, commandsPerRowMax + 2);
  // Every command of the first batch row linked, one of the second.
  const linked = new Set([...sent.slice(0, commandsPerRowMax), sent[commandsPerRowMax + 1]].map((envelope) => (envelope === undefined ? '' : linkedKey(envelope))));
  // A command of the same id for another receiver was not linked: ids are matched with their receivers.
  const sameIdElsewhere = sent[commandsPerRowMax];
  assert.ok(sameIdElsewhere);
  assert.equal(withoutLinked(sender, new Set([`tally/elsewhere\u0000${sameIdElsewhere.commandId}`])), sender);
  const trimmed = withoutLinked(sender, linked);
  assert.deepEqual(trimmed.commit.outbox.map((row) => row.id), ['note/a:5:0', 'note/a:5:1'], 'numbered as the store expects');
  assert.deepEqual(trimmed.commit.outbox.map((row) => row.topic), ['webhooks', outboxTopicCommandBatches]);
  assert.deepEqual(commandsSentBy(trimmed).map((envelope) => envelope.commandId), [sent[commandsPerRowMax]?.commandId]);
  assert.equal(trimmed.outboxRows, trimmed.commit.outbox);
  // Nothing linked: the step as it was.
  assert.equal(withoutLinked(sender, new Set()), sender);
});

test("two steps of one actor are one write: the first's version, the later state, both steps' commands and rows", () => {
  const first = step({
    state: { n: 1, dueAtMs: 1_000 }, commandId: 'c1', outbox: sends('c1', 2),
    readModels: [{ collection: 'notes', id: 'a', doc: { n: 1 } }, { collection: 'other', id: 'a', doc: { kept: true } }],
  });
  assert.equal(first.timerAtMs, 1_000);
  const second = step({ base: baseAfter(first), state: { n: 2, dueAtMs: 1_000 }, commandId: 'c2', outbox: [webhook], readModels: [{ collection: 'notes', id: 'a', doc: { n: 2 } }] });
  assert.deepEqual([second.commit.expectedVersion, second.commit.newVersion], [5, 6], 'the second step follows the first');
  assert.equal(second.timerAtMs, undefined, 'the timer the first step set is unchanged');
  const merged = mergedSteps(first, second);
  assert.deepEqual([merged.commit.expectedVersion, merged.commit.newVersion], [4, 5]);
  assert.deepEqual(merged.commit.state, { n: 2, dueAtMs: 1_000 });
  assert.deepEqual(merged.state, { n: 2, dueAtMs: 1_000 });
  assert.deepEqual(merged.commit.appliedCommands.map((applied) => applied.commandId), ['c1', 'c2']);
  assert.deepEqual(merged.commit.outbox.map((row) => [row.id, row.topic]), [['note/a:5:0', outboxTopicCommandBatches], ['note/a:5:1', 'webhooks']]);
  const models = new Map(merged.commit.readModels.map((model) => [`${model.collection}/${model.id}`, model.doc]));
  assert.deepEqual(models.get('notes/a'), { n: 2 }, 'the later document wins');
  assert.deepEqual(models.get('other/a'), { kept: true }, "the first step's other documents stay");
  assert.deepEqual(models.get('timers/note/a'), { actorId: 'note/a', shard: 1, dueAtMs: 1_000 }, "the first step's timer row stays");
  assert.equal(merged.timerAtMs, 1_000);
  // A later step that moves the timer: its row wins.
  const third = step({ base: baseAfter(merged), state: { n: 3, dueAtMs: null }, commandId: 'c3', outbox: [] });
  const again = mergedSteps(merged, third);
  assert.equal(again.timerAtMs, null);
  assert.equal(again.refusedTimerAtMs, null);
  assert.equal(new Map(again.commit.readModels.map((model) => [`${model.collection}/${model.id}`, model.doc])).get('timers/note/a'), null);
  assert.deepEqual(baseAfter(again).applied, new Map([['c1', 1], ['c2', 2], ['c3', 3]]));
});

test("a timer the first step refused is moot once a later step of the actor moved the timer", () => {
  const actor = activeActor('note/a', behavior as ActorBehavior<unknown>, { version: 4, state: { n: 0, dueAtMs: 1_000 } }, 0);
  const first = buildWrite({
    actor, base: null, behavior: behavior as ActorBehavior<unknown>, fence: { shard: 1, token: 1 }, state: { n: 1, dueAtMs: 1_000 }, changed: true,
    appliedCommands: [{ commandId: 'timer', reply: null }], outbox: sends('timer', 1), readModels: [], replies: [], refusedTimerAtMs: 1_000,
  });
  const moved = step({ base: baseAfter(first), state: { n: 2, dueAtMs: 5_000 }, commandId: 'c2', outbox: [] });
  assert.equal(mergedSteps(first, moved).refusedTimerAtMs, null);
  assert.equal(mergedSteps(first, moved).timerAtMs, 5_000);
  const kept = step({ base: baseAfter(first), state: { n: 2, dueAtMs: 1_000 }, commandId: 'c2', outbox: [] });
  assert.equal(mergedSteps(first, kept).refusedTimerAtMs, 1_000, 'still wanted: armed again by the worker');
});

test('a receiver left out once in a batch stays out: a later command for it cannot overtake the one left in its row', async () => {
  // Round 1: `a` sends to `r`, whose lane a younger batch holds (left out). Round 2 would bring
  // `b`'s command for `r` when that lane is free again: still left out.
  const laneOfR: { batch: number | null } = { batch: 9 };
  const prepared: string[] = [];
  const host: LinkHost = {
    mayReceive: () => true,
    laneBatch: (id) => (id === 'tally/r' ? laneOfR.batch : null),
    joinLane: () => undefined,
    async prepare(id, commands) {
      prepared.push(id);
      laneOfR.batch = null;
      const sender = id === 'tally/b' ? [{ actorType: 'tally', actorKey: 'r', kind: 'add', payload: null }] : [];
      const receiver = activeActor(id, behavior as ActorBehavior<unknown>, null, 0);
      return buildWrite({
        actor: receiver, base: null, behavior: behavior as ActorBehavior<unknown>, fence: { shard: 1, token: 1 }, state: { n: 1, dueAtMs: null }, changed: true,
        appliedCommands: commands.map((sent) => ({ commandId: sent.commandId, reply: null })),
        outbox: sentCommands(commands[0] ?? command('x'), sender, 0), readModels: [], replies: [], refusedTimerAtMs: null,
      });
    },
  };
  const own = step({ state: { n: 1, dueAtMs: null }, commandId: 'c1', outbox: [
    ...sentCommands(command('c1'), [{ actorType: 'tally', actorKey: 'r', kind: 'add', payload: null }, { actorType: 'tally', actorKey: 'b', kind: 'add', payload: null }], 0),
  ] });
  const { writes, linked } = await linkSteps(host, [{ id: 'note/a', step: own }], 5);
  assert.deepEqual(prepared, ['tally/b'], 'r was never prepared');
  assert.deepEqual(writes.map((write) => write.actor.id), ['note/a', 'tally/b']);
  assert.equal(linked.size, 1);
  // b's command for r stays in b's row, as a's stays in a's.
  assert.deepEqual(commandsSentBy(withoutLinked(writes[1] as PreparedWrite, linked)).map((sent) => `${sent.actorType}/${sent.actorKey}`), ['tally/r']);
  assert.deepEqual(commandsSentBy(withoutLinked(own, linked)).map((sent) => `${sent.actorType}/${sent.actorKey}`), ['tally/r']);
});

test('a linked step that writes nothing remembers nothing: its commands are handled when they come through their row', async () => {
  const actor = activeActor('note/a', { ...behavior, handle: () => ({ reply: 'read' }) } as ActorBehavior<unknown>, { version: 4, state: { n: 0, dueAtMs: null } }, 0);
  const context = { store: { getAppliedReply: async () => undefined }, nowMs: () => 0, decodedOnArrival: () => undefined, log: () => undefined };
  const linkedStep = await prepareStep(context, actor, { shard: 1, token: 1 }, [command('read-1')], [], null, { linked: true });
  assert.equal(linkedStep.kind, 'done');
  assert.equal(actor.recentCommandIds.has('read-1'), false);
  await prepareStep(context, actor, { shard: 1, token: 1 }, [command('read-2')]);
  assert.equal(actor.recentCommandIds.has('read-2'), true, 'a step of its own remembers, as before');
});

test('a receiver is asked again after waiting on an older batch: blocked meanwhile, it is left out', async () => {
  // `r`'s lane is held by an older batch, whose write of `r` is refused while this one waits.
  const blocked = new Set<string>();
  const prepared: string[] = [];
  const host: LinkHost = {
    mayReceive: (_command, id) => !blocked.has(id),
    laneBatch: (id) => (id === 'tally/r' ? 3 : null),
    joinLane: (id) => {
      if (id !== 'tally/r') return undefined;
      return Promise.resolve().then(() => {
        blocked.add('tally/r');
      });
    },
    async prepare(id, commands) {
      prepared.push(id);
      const receiver = activeActor(id, behavior as ActorBehavior<unknown>, null, 0);
      return buildWrite({
        actor: receiver, base: null, behavior: behavior as ActorBehavior<unknown>, fence: { shard: 1, token: 1 }, state: { n: 1, dueAtMs: null }, changed: true,
        appliedCommands: commands.map((sent) => ({ commandId: sent.commandId, reply: null })), outbox: [], readModels: [], replies: [], refusedTimerAtMs: null,
      });
    },
  };
  const own = step({ state: { n: 1, dueAtMs: null }, commandId: 'c1', outbox: sends('c1', 1).map((message) => ({ ...message, payload: { ...(message.payload as CommandEnvelope), actorKey: 'r' } })) });
  const { writes, linked } = await linkSteps(host, [{ id: 'note/a', step: own }], 5);
  assert.deepEqual(prepared, [], 'not prepared on a state its older batch could not make durable');
  assert.deepEqual(writes.map((write) => write.actor.id), ['note/a']);
  assert.equal(linked.size, 0);
});
