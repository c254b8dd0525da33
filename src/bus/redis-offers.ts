// Offers in Redis, shared by every edge of a deployment. An offer is a string key
// `<prefix>offer:{<partnerId>}:<id>` holding the offer's text, expiring (PX, the server's clock) at
// its validity plus the grace; its partner's share is counted in the sorted set
// `<prefix>offers:{<partnerId>}` (offer ids scored by when they stop being valid). Both keys carry
// the partner as hash tag, so the one script that writes them (`offerScript` in redis-scripts.ts)
// touches one Redis Cluster slot. One command per offer, one GET per lookup. Its connection is made
// on first use, so the roles that never quote (shard workers, payout, watcher…) open none. A lookup
// under another partner reads another key and misses. Redis errors map as the bus's do (`toBusError`).
//
// Durability is Redis' own, as for the command streams (docs/operations.md, "Redis"): an offer lost
// with a Redis that restarts without its append-only file only means its partner quotes again.
import { BusError } from './bus.ts';
import { createRedisClient, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
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

export class RedisOffers<T extends OfferFields> implements Offers<T> {
  /** Made on first use when given a URL: only processes that serve quotes (edges) connect at all. */
  private connection: RedisClient | null;
  private readonly connect: () => RedisClient;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;
  private readonly codec: OfferCodec<T>;
  private readonly config: OffersConfig;
  private readonly clock: { nowMs(): number };

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

  async offer(offer: T): Promise<OfferOutcome<T>> {
    assertOfferKey(offer.partnerId, offer.id);
    this.assertConnected();
    const text = this.codec.encode(offer);
    const validMs = validForMs(offer, this.clock.nowMs());
    const reply = await offerScript
      .run(this.client, [this.offerKey(offer.partnerId, offer.id), `${this.keyPrefix}offers:{${offer.partnerId}}`], [
        text,
        validMs,
        validMs + this.config.graceMs,
        this.config.perPartnerMax,
        offer.id,
      ])
      .catch(throwBusError);
    if (!Array.isArray(reply)) throw new Error(`unexpected offer reply: ${JSON.stringify(reply)}`);
    const [code, stored] = reply as unknown[];
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

  async close(): Promise<void> {
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
}
