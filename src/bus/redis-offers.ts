// Offers in Redis, shared by every edge of a deployment. An offer is a string key
// `<prefix>offer:{<partnerId>}:<id>` holding the offer's text, expiring (PX, the server's clock) at
// its validity plus the grace; its partner's share is counted in the sorted set
// `<prefix>offers:{<partnerId>}` (offer ids scored by when they stop being valid). Both keys carry
// the partner as hash tag. The offers made in one event-loop turn travel as ONE command (the batch
// script `offerScript` in redis-scripts.ts; on a Redis Cluster one per slot, since a script's keys
// must share one, in one pipeline per master), the way the bus batches commands: at 64
// connections one EVALSHA for dozens of quotes instead of one each (bench/README.md, "Offers
// batched per turn"). One GET per lookup. Its connection is made on first use, so the roles that never quote (shard workers,
// payout, watcher…) open none. A lookup under another partner reads another key and misses. Redis
// errors map as the bus's do (`toBusError`), for every offer of the failed command.
//
// Durability is Redis' own, as for the command streams (docs/operations.md, "Redis"): an offer lost
// with a Redis that restarts without its append-only file only means its partner quotes again. So
// does an offer stored by a command whose reply was lost (its request was answered 503): it is
// never answered as a quote, and only holds its share until it expires.
import { BusError } from './bus.ts';
import { clusterKeySlot, createRedisClient, isCluster, throwBusError, toBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
import { defineScripts, offerScript } from './redis-scripts.ts';
import { assertNoBraces } from './shards.ts';
import { assertOfferKey, assertOffersConfig, isOfferKey, validForMs, type OfferCodec, type OfferFields, type OfferOutcome, type Offers, type OffersConfig } from './offers.ts';

export interface RedisOffersOptions<T> extends OffersConfig {
  /** A Redis URL (owned and closed here) or a client to share, made by `createRedisClient` (not closed). */
  readonly redis: string | RedisClient;
  /** Prefix of every key (isolates deployments and tests); no braces. */
  readonly keyPrefix?: string;
  readonly codec: OfferCodec<T>;
  /** The caller's clock: only to turn an offer's `expiresAtMs` into a time to live. */
  readonly clock?: { nowMs(): number };
  /** Where connection outages are logged (a client of our own: under the name `offers`). */
  readonly connectionLog?: RedisConnectionLog;
}

/** At most this many offers per command (the bench's 64 connections make fewer per turn). */
const offersPerCommandMax = 256;

interface PendingOffer<T> {
  readonly offer: T;
  readonly text: string;
  readonly validMs: number;
  readonly resolve: (outcome: OfferOutcome<T>) => void;
  readonly reject: (error: unknown) => void;
}

export class RedisOffers<T extends OfferFields> implements Offers<T> {
  /** Made on first use when given a URL: only processes that serve quotes (edges) connect at all. */
  private connection: RedisClient | null;
  private readonly connect: () => RedisClient;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;
  private readonly codec: OfferCodec<T>;
  private readonly config: OffersConfig;
  private readonly clock: { nowMs(): number };
  /** Offers made this turn, sent together once its I/O callbacks have run. */
  private pending: Array<PendingOffer<T>> = [];
  private sendScheduled = false;
  /** Commands sent and not yet answered. */
  private readonly sending = new Set<Promise<void>>();
  private closing = false;

  constructor(options: RedisOffersOptions<T>) {
    assertOffersConfig(options);
    this.keyPrefix = options.keyPrefix ?? '';
    assertNoBraces('key prefix', this.keyPrefix);
    this.codec = options.codec;
    this.config = { perPartnerMax: options.perPartnerMax, graceMs: options.graceMs };
    this.clock = options.clock ?? { nowMs: () => Date.now() };
    const { redis } = options;
    if (typeof redis === 'string') {
      this.connection = null;
      this.connect = () => createRedisClient(redis, 'offers', options.connectionLog ?? {});
      this.ownsClient = true;
    } else {
      defineScripts(redis);
      this.connection = redis;
      this.connect = () => redis;
      this.ownsClient = false;
    }
  }

  private get client(): RedisClient {
    this.connection ??= this.connect();
    return this.connection;
  }

  offer(offer: T): Promise<OfferOutcome<T>> {
    return new Promise((resolve, reject) => {
      // Inside the executor: a malformed offer or an unavailable Redis is a rejection, as the port says.
      if (this.closing) throw new BusError('unavailable', 'quote offers are closed (the process is stopping)');
      assertOfferKey(offer.partnerId, offer.id);
      this.assertConnected();
      const text = this.codec.encode(offer);
      const validMs = validForMs(offer, this.clock.nowMs());
      this.pending.push({ offer, text, validMs, resolve, reject });
      if (this.pending.length >= offersPerCommandMax) this.sendPending();
      else if (!this.sendScheduled) {
        // Once this turn's I/O callbacks have run: every offer they made goes in one command.
        this.sendScheduled = true;
        setImmediate(() => {
          this.sendScheduled = false;
          this.sendPending();
        });
      }
    });
  }

  /**
   * Sends every offer waiting: one command on a single server; on a Redis Cluster one per slot
   * (a script's keys share one), in one pipeline per master. Never throws: a failure rejects the
   * batch's offers.
   */
  private sendPending(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    try {
      // Checked again at sending: the client may have lost its connection since the offers were made.
      this.assertConnected();
      this.track(this.send(this.bySlot(batch)));
    } catch (error) {
      for (const pending of batch) pending.reject(toBusError(error));
    }
  }

  /** The batch as one group on a single server; per slot on a Redis Cluster. */
  private bySlot(batch: Array<PendingOffer<T>>): Array<Array<PendingOffer<T>>> {
    if (!isCluster(this.client)) return [batch];
    const groups = new Map<number, Array<PendingOffer<T>>>();
    for (const pending of batch) {
      const slot = clusterKeySlot(this.indexKey(pending.offer.partnerId));
      const group = groups.get(slot);
      if (group === undefined) groups.set(slot, [pending]);
      else group.push(pending);
    }
    return [...groups.values()];
  }

  /** Remembers a send in flight until it settles, so that `close` waits for its answers. */
  private track(sending: Promise<void>): void {
    this.sending.add(sending);
    void sending.finally(() => this.sending.delete(sending));
  }

  private async send(groups: ReadonlyArray<ReadonlyArray<PendingOffer<T>>>): Promise<void> {
    const calls = groups.map((group) => {
      const keys: string[] = [];
      const args: Array<string | number> = [this.config.perPartnerMax];
      for (const { offer, text, validMs } of group) {
        keys.push(this.offerKey(offer.partnerId, offer.id), this.indexKey(offer.partnerId));
        args.push(text, validMs, validMs + this.config.graceMs, offer.id);
      }
      return { keys, args };
    });
    let outcomes: Awaited<ReturnType<typeof offerScript.runEach>>;
    try {
      outcomes = await offerScript.runEach(this.client, calls);
    } catch (error) {
      outcomes = calls.map(() => ({ ok: false, error }));
    }
    groups.forEach((group, g) => {
      const outcome = outcomes[g];
      if (outcome === undefined || !outcome.ok) {
        const failure = toBusError(outcome?.error ?? new Error('no outcome for an offer batch'));
        for (const pending of group) pending.reject(failure);
        return;
      }
      const replies = outcome.value;
      group.forEach((pending, i) => {
        try {
          pending.resolve(this.outcomeOf(pending.offer, Array.isArray(replies) ? replies[i] : undefined));
        } catch (error) {
          pending.reject(error);
        }
      });
    });
  }

  /** What the script answered for one offer (its header in redis-scripts.ts). */
  private outcomeOf(offer: T, reply: unknown): OfferOutcome<T> {
    const [code, stored] = Array.isArray(reply) ? (reply as unknown[]) : [];
    if (code === 2) return { ok: true, offer };
    if (code === 1 && typeof stored === 'string') return { ok: true, offer: this.codec.decode(stored) };
    if (code === 0) return { ok: false, reason: 'partner_full', perPartnerMax: this.config.perPartnerMax };
    throw new Error(`unexpected offer reply: ${JSON.stringify(reply)}`);
  }

  async find(partnerId: string, id: string): Promise<T | null> {
    if (!isOfferKey(partnerId, id)) return null;
    this.assertConnected();
    const text = await this.client.get(this.offerKey(partnerId, id)).catch(throwBusError);
    return text === null ? null : this.codec.decode(text);
  }

  /**
   * Stops taking offers, sends those made this turn and waits for every answer before the
   * connection closes: a quote made while the process stops is answered, not failed (QUIT is not
   * auto-pipelined, so it would otherwise overtake a batch still waiting for its turn).
   */
  async close(): Promise<void> {
    this.closing = true;
    this.sendPending();
    await Promise.allSettled([...this.sending]);
    const client = this.connection;
    if (!this.ownsClient || client === null) return;
    this.connection = null;
    await client.quit().catch(() => {
      client.disconnect();
    });
  }

  /**
   * A client that lost its connection and is trying to get it back fails at once: an offer or a
   * lookup is the partner's request in flight, answered 503 now rather than held for the client's
   * reconnection backoff (up to about 8 s: test/integration/edge-outage.test.ts). A client still
   * making its first connection (a process starting) queues as usual.
   */
  private assertConnected(): void {
    if (this.client.status === 'reconnecting') throw new BusError('unavailable', 'Redis is unavailable (reconnecting)');
  }

  private offerKey(partnerId: string, id: string): string {
    return `${this.keyPrefix}offer:{${partnerId}}:${id}`;
  }

  private indexKey(partnerId: string): string {
    return `${this.keyPrefix}offers:{${partnerId}}`;
  }
}
