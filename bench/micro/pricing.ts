// Pricing: the three quote kinds end to end through `priceQuoteRequest` (amount parsing, route
// resolution, rate, fee, rounding, bounds) with the default corridors. Baseline: JSON.parse +
// JSON.stringify of the same request body, i.e. the least an edge does with it anyway.
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { priceQuoteRequest, quoteToJson, type QuoteRequest } from '../../src/domain/pricing.ts';
import { jsonRoundTripCase, repeatedCase, type MicroSuite } from '../lib/micro.ts';

const nowMs = 1_750_000_000_000;
const opsPerCall = 20;

export const payoutRequest: QuoteRequest = {
  kind: 'payout',
  amount: 50_000,
  cryptoCurrency: 'USDC',
  network: 'STELLAR',
  paymentMethod: 'BREB',
  targetCurrency: 'COP',
};
const reverseRequest: QuoteRequest = { ...payoutRequest, kind: 'reverse', amount: 25.5, network: 'SOLANA' };
const onrampRequest: QuoteRequest = { ...payoutRequest, kind: 'onramp', amount: 250, network: 'CELO', paymentMethod: 'PIX', targetCurrency: 'BRL' };

export function pricingSuite(): MicroSuite {
  const config = loadDefaultCorridors();
  const context = { rates: config.rates, quoteId: '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f', partnerId: 'bench', nowMs };
  const price = (request: QuoteRequest) => (): unknown => {
    const result = priceQuoteRequest(config, request, context);
    if (!result.ok) throw new Error(`pricing bench: ${result.error.reason}`);
    return result.quote;
  };
  const body = { amount: 50_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
  return {
    group: 'pricing',
    baselineLabel: 'JSON.parse+stringify of the /quote body',
    baseline: jsonRoundTripCase('baseline: JSON round trip of the quote body', body, opsPerCall),
    cases: [
      repeatedCase('priceQuoteRequest payout (COP/BREB/STELLAR)', opsPerCall, price(payoutRequest)),
      repeatedCase('priceQuoteRequest reverse (COP/BREB/SOLANA)', opsPerCall, price(reverseRequest)),
      repeatedCase('priceQuoteRequest onramp (BRL/PIX/CELO)', opsPerCall, price(onrampRequest)),
      repeatedCase('priceQuoteRequest payout + quoteToJson + JSON.stringify', opsPerCall, () => {
        const result = priceQuoteRequest(config, payoutRequest, context);
        if (!result.ok) throw new Error(`pricing bench: ${result.error.reason}`);
        return JSON.stringify(quoteToJson(result.quote));
      }),
    ],
  };
}
