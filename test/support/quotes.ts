// Quotes as unit tests of the transaction and its saga use them: a BREB payout of 25.5 USDC for
// 100,000.00 COP, and the same on PIX (100.00 BRL), created a second before `atMs` and valid an
// hour after it.
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';

export function brebPayoutQuote(atMs: number): Quote {
  return {
    id: 'q-breb',
    partnerId: 'acme',
    kind: 'payout',
    direction: 'payout',
    network: 'STELLAR',
    cryptoCurrency: 'USDC',
    paymentMethod: 'BREB',
    targetCurrency: 'COP',
    tokenDecimals: 7,
    sourceAmount: decimal(255_000_000n, 7), // 25.5 USDC
    targetAmount: decimal(10_000_000n, 2), // 100,000.00 COP
    fee: { amount: decimal(2_500_000n, 7), currency: 'USDC', type: 'percentage' },
    rate: decimal(4_000n, 0),
    createdAtMs: atMs - 1000,
    expiresAtMs: atMs + 3_600_000,
  };
}

export function pixPayoutQuote(atMs: number): Quote {
  return { ...brebPayoutQuote(atMs), id: 'q-pix', paymentMethod: 'PIX', targetCurrency: 'BRL', targetAmount: decimal(10_000n, 2), rate: decimal(54n, 1) };
}
