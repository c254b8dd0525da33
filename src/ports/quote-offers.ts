// Quote offers: a priced quote between `POST /quote` and its acceptance (docs/actors.md, "Quotes
// are offers"). Nothing contends on a quote until a transaction accepts it, and no money depends on
// it before then, so the edge prices it and keeps it here (Redis with the Redis bus, this process
// otherwise: src/service/context.ts) for its validity plus a grace, with no actor, no durable write
// and no round trip through a shard. The acceptance finds it here (or as the quote actor's snapshot
// once claimed) and hands it to the transaction, whose claim makes the quote actor adopt it.
import type { Offers } from '../bus/offers.ts';
import { quoteSchema } from '../actors/commands.ts';
import { fromJsonValue, toJsonValue } from '../actors/state-codec.ts';
import type { Quote } from '../domain/quote.ts';

export type QuoteOffers = Offers<Quote>;

/**
 * A quote as an offer's text: the state codec's JSON (decimals as `{ "decimal__": "…" }`), the
 * same shape as the quote actor's snapshot. Read back through the quote schema, so a damaged or
 * foreign value is an error, never a quote.
 */
export const quoteOfferCodec = {
  encode: (quote: Quote): string => JSON.stringify(toJsonValue(quote)),
  decode: (text: string): Quote => quoteSchema.parse(fromJsonValue<unknown>(JSON.parse(text))),
};
