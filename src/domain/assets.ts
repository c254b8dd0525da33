// The vocabulary of routes: networks, crypto assets, fiat currencies and payment methods, with the
// decimals each has. Token decimals here are defaults; the active mint's configured decimals win
// (see corridors), because payment_context.decimals must state the real mint's.

export const networks = ['STELLAR', 'SOLANA', 'CELO'] as const;
export type Network = (typeof networks)[number];

export const cryptoAssets = ['USDC', 'USDT'] as const;
export type CryptoAsset = (typeof cryptoAssets)[number];

export const fiatCurrencies = ['COP', 'BRL'] as const;
export type FiatCurrency = (typeof fiatCurrencies)[number];

export const paymentMethods = ['BREB', 'PIX'] as const;
export type PaymentMethod = (typeof paymentMethods)[number];

/** Currencies the spec names as planned: recognised only to answer `corridor_unavailable`. */
export const plannedCurrencies = ['ARS', 'PEN', 'PHP', 'THB', 'VND'] as const;

export type ChainFamily = 'stellar' | 'solana' | 'evm';

export const fiatDecimals: Readonly<Record<FiatCurrency, number>> = { COP: 2, BRL: 2 };

/** The local currency each payment method pays in. */
export const methodCurrency: Readonly<Record<PaymentMethod, FiatCurrency>> = { BREB: 'COP', PIX: 'BRL' };

export const chainFamily: Readonly<Record<Network, ChainFamily>> = {
  STELLAR: 'stellar',
  SOLANA: 'solana',
  CELO: 'evm',
};

/** Default token decimals per network (Stellar amounts always carry 7 places). */
export const defaultTokenDecimals: Readonly<Record<Network, Partial<Record<CryptoAsset, number>>>> = {
  STELLAR: { USDC: 7 },
  SOLANA: { USDC: 6 },
  CELO: { USDC: 6, USDT: 6 },
};

export function isOneOf<T extends string>(values: readonly T[], candidate: unknown): candidate is T {
  return typeof candidate === 'string' && (values as readonly string[]).includes(candidate);
}
