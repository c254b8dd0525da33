// Typed actor commands on the real runtime and bus (a private Redis, the embedded store): a command
// whose payload does not fit its actor type's command map, or whose kind is not in it, is logged,
// acknowledged and dropped on arrival — answered `malformed_command` when someone waits — and never
// reaches the actor; the next good command to the same actor is applied as usual.
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { serviceBehaviors } from '../../src/service/behaviors.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { kybCounterKey } from '../../src/domain/limits.ts';
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { startActorHarness, type ActorHarness } from '../support/actor-harness.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { eventually } from '../support/eventually.ts';
import { storedCounterLines } from '../support/counter-snapshots.ts';

const askTimeoutMs = 20_000;
let harness: ActorHarness;
const logged: Array<{ level: string; message: string; fields: Record<string, unknown> | undefined }> = [];

before(async () => {
  harness = await startActorHarness({ busKind: 'redis', log: (level, message, fields) => logged.push({ level, message, fields }) });
});

after(async () => {
  await harness?.stop();
});

function droppedLine(commandId: string) {
  return logged.find((line) => line.message === 'dropping a malformed command' && line.fields?.['commandId'] === commandId);
}

async function pendingOn(actorType: string, actorKey: string): Promise<number> {
  const summary = await harness.bus.summary(harness.client.streamFor(actorType, actorKey));
  return summary.groups.reduce((total, group) => total + group.pending, 0);
}

async function newQuote(partnerId: string): Promise<Quote> {
  const quoteId = randomUUID();
  const reply = await harness.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId,
    request: { kind: 'reverse', amount: 10, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'PIX', targetCurrency: 'BRL' },
  }, { timeoutMs: askTimeoutMs });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  const quote = await loadQuote(harness.store, quoteId);
  assert.ok(quote);
  return quote;
}

test('a malformed accept is answered malformed_command, logged and acknowledged; the next good accept of the same transaction creates it', async () => {
  const transactionId = randomUUID();
  const commandId = randomUUID();
  const malformed = await harness.client.ask<{ ok: boolean; code?: string; reason?: string }>(
    'transaction', transactionId, 'accept', { partnerId: 'acme', userId: 'user-1' }, { commandId, timeoutMs: askTimeoutMs },
  );
  assert.equal(malformed.ok, false);
  assert.equal(malformed.code, 'malformed_command');
  assert.match(malformed.reason ?? '', /quote/, 'the reason names what is missing');
  const line = droppedLine(commandId);
  assert.ok(line !== undefined, 'one log line names the dropped command');
  assert.equal(line.level, 'error');
  assert.equal(line.fields?.['actorType'], 'transaction');
  assert.equal(await harness.store.load(`transaction/${transactionId}`), null, 'the actor never saw it: nothing written');

  const quote = await newQuote('acme');
  const payload = acceptPayload(quote, { accountNumber: '52998224725' });
  const accepted = await harness.client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload), { timeoutMs: askTimeoutMs });
  assert.ok(accepted.ok && !accepted.kycRequired, JSON.stringify(accepted));
  assert.equal(accepted.id, transactionId);
  await eventually(async () => assert.equal(await pendingOn('transaction', transactionId), 0, 'every entry acknowledged'));
});

test('a malformed relayed command (nobody waits) is dropped with a log line, and the next good one to the same counter applies', async () => {
  const key = kybCounterKey(`partner-${randomUUID()}`);
  const bad = randomUUID();
  // A reserve without its amount: handled, it would have reached the cap arithmetic as `undefined`.
  await harness.client.tell('counter', key, 'reserve', { kind: 'reserve', window: 'kyb', transactionId: 'tx-bad', method: 'PIX' }, bad);
  const good = randomUUID();
  await harness.client.tell('counter', key, 'reserve', toJsonValue({ kind: 'reserve', window: 'kyb', transactionId: 'tx-good', amount: decimal(5n, 0), method: 'PIX', kybApproved: false }), good);
  await eventually(async () => {
    const lines = await storedCounterLines(harness.store, `counter/${key}`);
    assert.ok(lines !== null, 'the good reserve is written');
    assert.match(lines, /tx-good/);
    assert.doesNotMatch(lines, /tx-bad/, 'the malformed one counted nothing');
  });
  const line = droppedLine(bad);
  assert.ok(line !== undefined, 'the dropped command is logged');
  assert.match(String(line.fields?.['reason']), /amount/);
  assert.equal(droppedLine(good), undefined);
  await eventually(async () => assert.equal(await pendingOn('counter', key), 0, 'the malformed entry is acknowledged, not retried'));
});

test('a kind the actor type does not take is malformed too', async () => {
  const commandId = randomUUID();
  const reply = await harness.client.ask<{ ok: boolean; code?: string }>('quote', randomUUID(), 'explode', null, { commandId, timeoutMs: askTimeoutMs });
  assert.deepEqual([reply.ok, reply.code], [false, 'malformed_command']);
  assert.ok(droppedLine(commandId));
});

test('every actor type of the service declares its command map', () => {
  const corridors = loadDefaultCorridors();
  const behaviors = serviceBehaviors({ corridors: () => corridors, rates: () => corridors.rates, partnerFee: () => undefined, limits: () => defaultLimitsConfig, dataKeys: sandboxDataKeyring() });
  for (const behavior of behaviors) assert.ok(behavior.commands !== undefined, `${behavior.type} has no command map`);
  assert.ok(behaviors.find((behavior) => behavior.type === 'transaction')?.commands?.['timer'], 'the transaction takes its timer');
});
