// Every Lua script of ours, each with a header listing its KEYS, ARGV, returns and errors, run
// through ioredis' own `defineCommand`: it sends EVAL the first time on each connection and EVALSHA
// after, and falls back to EVAL when the server lost the script (restart, SCRIPT FLUSH). Every
// script touches one slot (its keys share a hash tag), so it runs on a Redis Cluster too; the one
// batch script (`offerScript`) is given the keys of one slot at a time on a cluster. What a
// script's return codes mean is decided in its adapter, in one place (e.g. `leaseOutcome`).
//
// Why every client gets every script when it is made (`createRedisClient`), not on first use: an
// auto-pipelined call joins the pipeline ioredis is filling for that slot, and a pipeline only knows
// the scripts defined when it was opened. A script defined later, in the same tick as another
// command on that client, would not be found on the open pipeline (test/integration/redis-scripts.test.ts).
// The adapters also define them when built, for a client made elsewhere (before its first command).
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';

/** A client scripts are defined on (the connection module's `RedisClient`; named here to keep imports one-way). */
type ScriptHost = Redis | Cluster;

/** What `defineCommand` adds to a client: the script called with its keys, then its arguments. */
type DefinedScript = (...keysThenArgs: Array<string | number>) => Promise<unknown>;

/** The scripts defined on each client, by name, with their source (a name is never reused for another script). */
const definedScripts = new WeakMap<ScriptHost, Map<string, string>>();

export class RedisScript {
  constructor(
    /** The client method's name: unique among every script of ours and every Redis command. */
    readonly name: string,
    readonly lua: string,
    /** How many keys every call passes, or `'per call'` for a script that acts on a batch of keys. */
    readonly numberOfKeys: number | 'per call',
  ) {}

  /** Runs the script (defined on this client by `defineScripts`). */
  async run(client: ScriptHost, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    if (this.numberOfKeys === 'per call') throw new Error(`bug: script ${this.name} takes its keys per call; use runEach`);
    if (keys.length !== this.numberOfKeys) throw new Error(`script ${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    return this.commandOn(client).call(client, ...keys, ...args);
  }

  /**
   * Runs a script whose calls pass their own number of keys, once per call, with each call's
   * outcome. ioredis reads the key count from the first argument of such a script, and its
   * auto-pipelining routes a call by that first argument, which is then the count, not a key. On
   * one server that does not matter (one connection). On a cluster the calls go in one pipeline per
   * master instead (grouped by the slot of each call's first key; every key of a call must share
   * its slot), which routes by the keys: one write per master, as auto-pipelining would.
   */
  async runEach(client: ScriptHost, calls: ReadonlyArray<ScriptCall>): Promise<ScriptOutcome[]> {
    if (this.numberOfKeys !== 'per call') throw new Error(`bug: script ${this.name} takes a fixed number of keys; use run`);
    for (const { keys } of calls) if (keys.length === 0) throw new Error(`script ${this.name}: a call without keys`);
    const command = this.commandOn(client);
    if (!(client instanceof Cluster)) {
      return Promise.all(calls.map(async ({ keys, args }): Promise<ScriptOutcome> => {
        try {
          return { ok: true, value: await command.call(client, keys.length, ...keys, ...args) };
        } catch (error) {
          return { ok: false, error };
        }
      }));
    }
    const byMaster = new Map<string, number[]>();
    calls.forEach(({ keys }, index) => {
      const slot = calculateSlot(keys[0] ?? '');
      const master = client.slots[slot]?.[0] ?? `slot ${slot}`;
      const indexes = byMaster.get(master);
      if (indexes === undefined) byMaster.set(master, [index]);
      else indexes.push(index);
    });
    const outcomes: ScriptOutcome[] = calls.map(() => ({ ok: false, error: new Error(`script ${this.name}: no outcome`) }));
    await Promise.all([...byMaster.values()].map(async (indexes) => {
      const pipeline = client.pipeline() as unknown as ScriptPipeline;
      const queue = pipeline[this.name];
      if (typeof queue !== 'function') throw new Error(`bug: script ${this.name} is missing from its client's pipelines`);
      for (const index of indexes) {
        const { keys, args } = calls[index] as ScriptCall;
        queue.call(pipeline, keys.length, ...keys, ...args);
      }
      let results: Array<[Error | null, unknown]>;
      try {
        results = (await pipeline.exec()) ?? [];
      } catch (error) {
        for (const index of indexes) outcomes[index] = { ok: false, error };
        return;
      }
      indexes.forEach((index, i) => {
        const [error, value] = results[i] ?? [new Error(`script ${this.name}: its pipeline returned no result`), null];
        outcomes[index] = error === null ? { ok: true, value } : { ok: false, error };
      });
    }));
    return outcomes;
  }

  private commandOn(client: ScriptHost): DefinedScript {
    if (definedScripts.get(client)?.get(this.name) !== this.lua) {
      throw new Error(`bug: script ${this.name} was not defined on this client (clients made by createRedisClient have every script)`);
    }
    const command = (client as unknown as Record<string, DefinedScript>)[this.name];
    if (command === undefined) throw new Error(`bug: script ${this.name} is missing from its client`);
    return command;
  }
}

/** One call of a script that takes its number of keys per call. */
export interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: ReadonlyArray<string | number>;
}

export type ScriptOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** An ioredis pipeline as seen by a script: our scripts are defined on it too. */
type ScriptPipeline = Record<string, ((...keysThenArgs: Array<string | number>) => unknown) | undefined> & { exec(): Promise<Array<[Error | null, unknown]> | null> };

/** Defines scripts (default: all of ours) on a client, once each: a client shared by several adapters gets each script once. */
export function defineScripts(client: ScriptHost, scripts: readonly RedisScript[] = allScripts): void {
  let defined = definedScripts.get(client);
  if (defined === undefined) {
    defined = new Map();
    definedScripts.set(client, defined);
  }
  for (const script of scripts) {
    const lua = defined.get(script.name);
    if (lua === script.lua) continue;
    if (lua !== undefined) throw new Error(`bug: two different scripts named ${script.name}`);
    client.defineCommand(script.name, script.numberOfKeys === 'per call' ? { lua: script.lua } : { lua: script.lua, numberOfKeys: script.numberOfKeys });
    defined.set(script.name, script.lua);
  }
}

// ---------------------------------------------------------------------------------------------
// The bus (redis-bus.ts): single key each.

/**
 * readPending: re-read this consumer's own pending entries and report their delivery counts.
 *   KEYS[1]  stream
 *   ARGV[1]  group
 *   ARGV[2]  consumer
 *   ARGV[3]  count
 *   ARGV[4]  afterId (exclusive; '0' = from the start)
 * Returns { entries, pending }:
 *   entries  XREADGROUP's entries for the stream: { id, fields } or { id, false } when trimmed;
 *            trimmed ids are XACKed here, so each is reported exactly once.
 *   pending  XPENDING extended rows { id, consumer, idleMs, deliveries } after the re-read.
 * Errors: NOGROUP when the group (or stream) does not exist.
 */
export const readPendingScript = new RedisScript('busReadPending', `
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], ARGV[4])
local entries = {}
if reply and reply[1] then entries = reply[1][2] end
for _, entry in ipairs(entries) do
  if not entry[2] then redis.call('XACK', KEYS[1], ARGV[1], entry[1]) end
end
local start = '-'
if ARGV[4] ~= '0' and ARGV[4] ~= '0-0' then start = '(' .. ARGV[4] end
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], start, '+', ARGV[3], ARGV[2])
return { entries, pending }
`, 1);

/**
 * claimStale: take over entries idle for at least minIdleMs, with their delivery counts.
 *   KEYS[1]  stream
 *   ARGV[1]  group
 *   ARGV[2]  consumer that takes the entries
 *   ARGV[3]  minIdleMs
 *   ARGV[4]  cursor ('0-0' = start of the PEL)
 *   ARGV[5]  count
 * Returns { nextCursor, entries, deletedIds, deliveries }: XAUTOCLAIM's reply (deleted ids are
 *   removed from the PEL by XAUTOCLAIM itself) plus deliveries[i] = delivery count of entries[i].
 * Errors: NOGROUP when the group (or stream) does not exist.
 */
export const claimStaleScript = new RedisScript('busClaimStale', `
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local deliveries = {}
for i, entry in ipairs(claimed[2]) do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], entry[1], entry[1], 1)
  if row[1] then deliveries[i] = row[1][4] else deliveries[i] = 1 end
end
return { claimed[1], claimed[2], claimed[3] or {}, deliveries }
`, 1);

// ---------------------------------------------------------------------------------------------
// Leases (redis-leases.ts). A lease hash `<prefix>lease:{<name>}` and its fencing-token counter
// `<prefix>lease-token:{<name>}` share the hash tag `{<name>}`: one slot.

/**
 * acquire
 *   KEYS[1]  lease hash      <prefix>lease:{<name>}
 *   KEYS[2]  token counter   <prefix>lease-token:{<name>}
 *   ARGV[1]  owner
 *   ARGV[2]  ttlMs
 * Returns {1, token}  granted: the lease was free, lapsed or held by this same owner; a fresh token
 *                     was drawn with INCR and the TTL set to ttlMs.
 *         {0, 0}      refused: held by another owner.
 */
export const acquireScript = new RedisScript('leaseAcquire', `
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder and holder ~= ARGV[1] then return {0, 0} end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', token)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, token}
`, 2);

/**
 * renew
 *   KEYS[1]  lease hash
 *   ARGV[1]  owner
 *   ARGV[2]  token
 *   ARGV[3]  ttlMs
 * Returns  1  renewed: TTL reset to ttlMs
 *          0  no lease (lapsed or released)
 *         -1  held by another owner or under another token (taken over)
 */
export const renewScript = new RedisScript('leaseRenew', `
local holder = redis.call('HMGET', KEYS[1], 'owner', 'token')
if not holder[1] then return 0 end
if holder[1] ~= ARGV[1] or holder[2] ~= ARGV[2] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`, 1);

/**
 * release
 *   KEYS[1]  lease hash
 *   ARGV[1]  owner
 *   ARGV[2]  token
 * Returns  1  released: the lease key is deleted, anyone may acquire at once
 *          0  no lease (lapsed or released)
 *         -1  held by another owner or under another token (not ours to release)
 */
export const releaseScript = new RedisScript('leaseRelease', `
local holder = redis.call('HMGET', KEYS[1], 'owner', 'token')
if not holder[1] then return 0 end
if holder[1] ~= ARGV[1] or holder[2] ~= ARGV[2] then return -1 end
redis.call('DEL', KEYS[1])
return 1
`, 1);

/**
 * inspect (read-only)
 *   KEYS[1]  lease hash
 * Returns {owner, token, remainingMs} for a live lease, or {} when there is none.
 */
export const inspectScript = new RedisScript('leaseInspect', `
local holder = redis.call('HMGET', KEYS[1], 'owner', 'token')
if not holder[1] then return {} end
return {holder[1], holder[2], redis.call('PTTL', KEYS[1])}
`, 1);

// ---------------------------------------------------------------------------------------------
// Shared token buckets (redis-token-buckets.ts).

/**
 * take
 *   KEYS[1]  bucket hash   <prefix>rate:{<name>}   fields: tokens (may be fractional), updatedAtMs
 *   ARGV[1]  ratePerSecond  tokens added per second (decimal text, > 0)
 *   ARGV[2]  burst          bucket size (integer ≥ 1)
 *   ARGV[3]  wanted         tokens asked for (integer ≥ 1)
 * The bucket is first refilled for the time since updatedAtMs (by the server's TIME; a clock step
 * backwards refills nothing), then min(wanted, whole tokens held) are taken.
 * Returns {granted, retryAfterMs}
 *   granted       0..wanted tokens taken now
 *   retryAfterMs  when granted < wanted: ms until the bucket holds one whole token again; else 0
 * The key expires when a bucket untouched since would be full again.
 */
export const takeScript = new RedisScript('tokenBucketTake', `
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'updatedAtMs')
local tokens = tonumber(held[1]) or burst
local updatedAtMs = tonumber(held[2]) or nowMs
tokens = math.min(burst, tokens + math.max(0, nowMs - updatedAtMs) * rate / 1000)
if nowMs > updatedAtMs then updatedAtMs = nowMs end
local granted = math.min(wanted, math.floor(tokens))
if granted < 0 then granted = 0 end
tokens = tokens - granted
local retryAfterMs = 0
if granted < wanted then retryAfterMs = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'updatedAtMs', tostring(updatedAtMs))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {granted, retryAfterMs}
`, 1);

/** Every script of ours: each client gets all of them when it is made (see the header). */
// ---------------------------------------------------------------------------------------------
// The deployment registry (redis-deployment.ts): single key.

/**
 * registerStoreHost: a process with its own embedded store registers its host, unless a live
 * process of the deployment on another host did (two hosts would each write their own store).
 *   KEYS[1]  the deployment's hash of hosts using an embedded store: host -> expiresAtMs
 *   ARGV[1]  this process's host name
 *   ARGV[2]  nowMs
 *   ARGV[3]  expiresAtMs of this registration (by the callers' clocks, which decide liveness)
 *   ARGV[4]  how long Redis keeps the hash without any registration (ms; only to clean up)
 * Returns: false when registered (expired entries of other hosts are removed on the way), or the
 * name of another host with a live registration (nothing written).
 */
export const registerStoreHostScript = new RedisScript(
  'paymentsRegisterStoreHost',
  `
local entries = redis.call('HGETALL', KEYS[1])
local now = tonumber(ARGV[2])
for i = 1, #entries, 2 do
  local host = entries[i]
  if tonumber(entries[i + 1]) <= now then
    redis.call('HDEL', KEYS[1], host)
  elseif host ~= ARGV[1] then
    return host
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return false
`,
  1,
);

// ---------------------------------------------------------------------------------------------
// Offers (redis-offers.ts): an offer key and its partner's index, both tagged {<partnerId>}.

/**
 * offers: stores a batch of offers (those one edge made in one event-loop turn, of partners whose
 * keys share a slot), each unless its id is taken and within its partner's share of valid offers.
 *   KEYS     per offer, two keys: the offer's string key, then its partner's index (a sorted set
 *            of offer ids scored by when they stop being valid)
 *   ARGV[1]  perPartnerMax
 *   ARGV     then per offer, four: its text, validMs (how long it stays valid from now, >= 1),
 *            keepMs (how long its key is kept: validMs plus the grace), its id (its index member)
 * Returns one reply per offer, in order:
 *         {1, text}  an offer with this id was stored already: its text, unchanged
 *         {2}        stored
 *         {0}        its partner has perPartnerMax valid offers: nothing stored
 * The offers are taken in order, so a batch counts exactly as the same offers one by one would.
 * Time is the server's (TIME, once per batch), as is the keys' expiry, so the edges' clocks never
 * matter. An index is trimmed of offers no longer valid once per batch (ZREMRANGEBYSCORE: O(log n
 * + removed)), so its count is exact; the index key itself expires once its last member would have.
 * Five commands per stored offer (Redis 7.0 or later, docs/operations.md): the offer is written
 * and an earlier one with its id read back in one `SET … NX GET`, and the index's expiry only ever
 * pushed later with `PEXPIRE … GT` (`NX` for an index that has none yet: GT counts no expiry as
 * the latest of all).
 */
export const offerScript = new RedisScript('offersPut', `
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local perPartnerMax = tonumber(ARGV[1])
local trimmed = {}
local replies = {}
for i = 1, #KEYS / 2 do
  local offerKey, index = KEYS[2 * i - 1], KEYS[2 * i]
  local text, validMs, keepMs, id = ARGV[4 * i - 2], tonumber(ARGV[4 * i - 1]), ARGV[4 * i], ARGV[4 * i + 1]
  if not trimmed[index] then
    redis.call('ZREMRANGEBYSCORE', index, '-inf', nowMs)
    trimmed[index] = true
  end
  if redis.call('ZCARD', index) >= perPartnerMax then
    local existing = redis.call('GET', offerKey)
    if existing then replies[i] = {1, existing} else replies[i] = {0} end
  else
    local existing = redis.call('SET', offerKey, text, 'NX', 'GET', 'PX', keepMs)
    if existing then
      replies[i] = {1, existing}
    else
      redis.call('ZADD', index, nowMs + validMs, id)
      if redis.call('PEXPIRE', index, validMs, 'GT') == 0 then redis.call('PEXPIRE', index, validMs, 'NX') end
      replies[i] = {2}
    end
  end
end
return replies
`, 'per call');

export const allScripts: readonly RedisScript[] = [
  readPendingScript,
  claimStaleScript,
  acquireScript,
  renewScript,
  releaseScript,
  inspectScript,
  takeScript,
  registerStoreHostScript,
  offerScript,
];
