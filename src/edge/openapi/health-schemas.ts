// GET /public/corridors/health as a zod schema (docs/corridor-health.md); response-schemas.ts lists
// it as a component of the OpenAPI document.
import { z } from 'zod';
import { cryptoAssets, fiatCurrencies, networks, paymentMethods } from '../../domain/assets.ts';

const times = z.strictObject({
  payouts: z.number().int().meta({ description: 'Payouts that succeeded in the period.' }),
  p50_ms: z.number().int().nullable().meta({ description: 'Median settlement time (deposit seen → payout completed), ms; null without payouts.' }),
  p95_ms: z.number().int().nullable(),
});

export const corridorHealthSchema = z.strictObject({
  generated_at: z.string().meta({ description: 'When these figures were computed (they are cached a few seconds).' }),
  corridors: z.array(
    z.strictObject({
      blockchain: z.enum(networks),
      cryptoCurrency: z.enum(cryptoAssets),
      paymentMethod: z.enum(paymentMethods),
      targetCurrency: z.enum(fiatCurrencies),
      rail: z.strictObject({
        state: z.enum(['up', 'degraded', 'down']),
        since: z.string().nullable().meta({ description: 'When the state began (RFC 3339); null when it held the whole last day.' }),
        recent_payouts: z.number().int().meta({ description: 'Payouts of the rail in the recent window.' }),
        recent_failure_share: z.number().min(0).max(1).nullable(),
      }),
      settlement: z.strictObject({ last_hour: times, last_day: times }),
      liquidity: z.enum(['ok', 'low', 'exhausted', 'unknown']).meta({ description: 'Never the amount.' }),
    }),
  ),
});
