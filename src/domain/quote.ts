// The quote record: what a partner was promised, frozen at quoting time. Pricing produces it; the
// quote registry stores it; acceptance turns it into a transaction. All amounts are exact decimals.
import type { CryptoAsset, FiatCurrency, Network, PaymentMethod } from './assets.ts';
import type { Decimal } from './money.ts';

/** Which endpoint computed the quote. */
export type QuoteKind = 'payout' | 'reverse' | 'onramp';

/** Payout: crypto in, fiat out. Onramp: fiat in (PIX), crypto out. */
export type Direction = 'payout' | 'onramp';

export const feeTypes = ['none', 'percentage', 'fixed', 'combined'] as const;
export type FeeType = (typeof feeTypes)[number];

export interface QuoteFee {
  /** Exact fee, in `currency`, at the token's decimals; already included in the quote. */
  readonly amount: Decimal;
  readonly currency: CryptoAsset;
  readonly type: FeeType;
}

export interface Quote {
  readonly id: string;
  readonly partnerId: string;
  readonly kind: QuoteKind;
  readonly direction: Direction;
  readonly network: Network;
  /** The asset the partner named (USDT on Celo is settled as USDC internally). */
  readonly cryptoCurrency: CryptoAsset;
  readonly paymentMethod: PaymentMethod;
  readonly targetCurrency: FiatCurrency;
  /** Token decimals of the active mint on `network` at quoting time. */
  readonly tokenDecimals: number;
  /**
   * Payout: crypto the partner sends, fee included (the `/quote` value, `payment_context.amount`).
   * Onramp: fiat (BRL) the user pays.
   */
  readonly sourceAmount: Decimal;
  /**
   * Payout: fiat the recipient receives (the `/quote/reverse` value).
   * Onramp: crypto the user receives (the `/quote/onramp` value).
   */
  readonly targetAmount: Decimal;
  readonly fee: QuoteFee;
  /** Fiat units per one crypto unit, as used for this quote. */
  readonly rate: Decimal;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
}

/** The `value` field of the quote response, by kind (see the spec's Quote table). */
export function quoteValue(quote: Quote): Decimal {
  switch (quote.kind) {
    case 'payout':
      return quote.sourceAmount;
    case 'reverse':
      return quote.targetAmount;
    case 'onramp':
      return quote.targetAmount;
  }
}
