// Corridors: which routes the service offers, with what bounds and fees. A route exists in code
// (`supportedRoutes`: the combinations the spec names) and is offered only when configuration
// enables its flow, its asset/network has an active mint, it has terms for its payment method and
// it is not marked unsupported. `GET /public/corridors` and quoting both read this one module, so
// the list is the authoritative statement of what can be quoted.
import {
  chainFamily,
  cryptoAssets,
  defaultTokenDecimals,
  fiatDecimals,
  isOneOf,
  methodCurrency,
  networks,
  paymentMethods,
  plannedCurrencies,
  type ChainFamily,
  type CryptoAsset,
  type FiatCurrency,
  type Network,
  type PaymentMethod,
} from './assets.ts';
import { isPositive, toJsonNumber, type Decimal } from './money.ts';
import type { Direction } from './quote.ts';
import { quoteError, type QuoteError } from './quote-errors.ts';

// ---------------------------------------------------------------------------------------------
// Validated configuration (produced by src/config/corridors.ts; plain values here)

export interface MintConfig {
  readonly active: boolean;
  /** Stellar: issuer account; Solana: mint address; Celo: token contract. */
  readonly identifier: string;
  readonly decimals: number;
}

export interface FeeConfig {
  /** Fraction of the net crypto amount, 0 ≤ percentage < 1 (0.01 = 1 %). */
  readonly percentage: Decimal;
  /** Flat amount in the crypto asset, ≥ 0. */
  readonly fixed: Decimal;
}

/** Bounds and fees of one direction × payment method. Bounds are in the fiat currency. */
export interface CorridorTerms {
  readonly minAmount: Decimal | null;
  readonly maxAmount: Decimal | null;
  readonly fee: FeeConfig;
  /** Per-network fee that replaces `fee` on that network. */
  readonly feeByNetwork: Readonly<Partial<Record<Network, FeeConfig>>>;
}

/** A route pattern; an absent field matches every value. */
export interface UnsupportedRoute {
  readonly direction?: Direction;
  readonly network?: Network;
  readonly cryptoCurrency?: CryptoAsset;
  readonly paymentMethod?: PaymentMethod;
}

export interface CorridorConfig {
  readonly flows: Readonly<Record<Direction, { readonly enabled: boolean }>>;
  readonly mints: Readonly<Record<Network, Readonly<Partial<Record<CryptoAsset, MintConfig>>>>>;
  readonly terms: Readonly<Record<Direction, Readonly<Partial<Record<PaymentMethod, CorridorTerms>>>>>;
  /** Fiat units per one USD stablecoin (fixed rates of the embedded rates adapter). */
  readonly rates: Readonly<Partial<Record<FiatCurrency, Decimal>>>;
  readonly quoteTtlMs: number;
  readonly unsupported: readonly UnsupportedRoute[];
}

// ---------------------------------------------------------------------------------------------
// Per-chain facts

export const chainIds: Readonly<Record<Network, string>> = {
  STELLAR: 'stellar:pubnet',
  SOLANA: 'solana:mainnet',
  CELO: 'eip155:42220',
};

export interface NotifyDescriptor {
  readonly endpoint: string | null;
  readonly required: boolean;
}

/** Stellar deposits are detected by memo; Solana and Celo transfers must be reported. */
export const notifyDescriptors: Readonly<Record<Network, NotifyDescriptor>> = {
  STELLAR: { endpoint: null, required: false },
  SOLANA: { endpoint: '/payments/notify', required: true },
  CELO: { endpoint: '/payments/notify', required: true },
};

export interface WalletSessionDescriptor {
  readonly chainId: string;
  readonly events: readonly string[];
  readonly methods: readonly string[];
  readonly namespace: string;
}

/**
 * Wallet-session (CAIP-25 style) descriptor: the namespace and the wallet methods a partner's
 * wallet needs to fund a deposit on the chain. Events are the standard EVM session events; the
 * Stellar and Solana namespaces define none that a funding flow needs.
 */
export const walletSessions: Readonly<Record<Network, WalletSessionDescriptor>> = {
  STELLAR: {
    chainId: chainIds.STELLAR,
    events: [],
    methods: ['stellar_signAndSubmitXDR', 'stellar_signXDR'],
    namespace: 'stellar',
  },
  SOLANA: {
    chainId: chainIds.SOLANA,
    events: [],
    methods: ['solana_signTransaction', 'solana_signAndSendTransaction'],
    namespace: 'solana',
  },
  CELO: {
    chainId: chainIds.CELO,
    events: ['accountsChanged', 'chainChanged'],
    methods: ['eth_sendTransaction', 'eth_signTypedData_v4'],
    namespace: 'eip155',
  },
};

/** Every amount is settled in USDC; USDT on Celo is converted to it internally. */
export const settlementAsset = 'USDC' satisfies CryptoAsset;

// ---------------------------------------------------------------------------------------------
// Routes

export interface RouteKey {
  readonly direction: Direction;
  readonly network: Network;
  readonly cryptoCurrency: CryptoAsset;
  readonly paymentMethod: PaymentMethod;
}

/** A resolved, offered route: everything quoting and acceptance need to know about it. */
export interface Route extends RouteKey {
  readonly chainFamily: ChainFamily;
  readonly chainId: string;
  readonly targetCurrency: FiatCurrency;
  readonly settlementAsset: typeof settlementAsset;
  readonly mint: MintConfig;
  /** Decimals of the active mint: the scale of every crypto amount on this route. */
  readonly tokenDecimals: number;
  readonly minAmount: Decimal | null;
  readonly maxAmount: Decimal | null;
  /** The corridor's fee on this network (a partner's own fee replaces it at pricing). */
  readonly fee: FeeConfig;
  readonly notify: NotifyDescriptor;
  readonly walletSession: WalletSessionDescriptor;
}

/** Assets the onramp can deliver (the spec names USDC only). */
const onrampAssets: readonly CryptoAsset[] = ['USDC'];
/** Methods a user can pay an onramp with (the spec names PIX only). */
const onrampMethods: readonly PaymentMethod[] = ['PIX'];

/**
 * The combinations the code supports, in listing order (network, asset, method). Payout: every
 * asset with a token on the network × every method. Onramp: USDC via PIX on every network.
 */
export function supportedRoutes(direction: Direction): RouteKey[] {
  const keys: RouteKey[] = [];
  for (const network of networks) {
    for (const cryptoCurrency of cryptoAssets) {
      if (defaultTokenDecimals[network][cryptoCurrency] === undefined) continue;
      if (direction === 'onramp' && !onrampAssets.includes(cryptoCurrency)) continue;
      for (const paymentMethod of paymentMethods) {
        if (direction === 'onramp' && !onrampMethods.includes(paymentMethod)) continue;
        keys.push({ direction, network, cryptoCurrency, paymentMethod });
      }
    }
  }
  return keys;
}

function routeKeyText(key: RouteKey): string {
  return `${key.direction}\u0000${key.network}\u0000${key.cryptoCurrency}\u0000${key.paymentMethod}`;
}

/** The supported combinations as a set: they depend on the vocabulary only, never on configuration. */
const supportedRouteKeys: ReadonlySet<string> = new Set(
  (['payout', 'onramp'] as const).flatMap((direction) => supportedRoutes(direction).map(routeKeyText)),
);

function isSupported(key: RouteKey): boolean {
  return supportedRouteKeys.has(routeKeyText(key));
}

function matchesUnsupported(pattern: UnsupportedRoute, key: RouteKey): boolean {
  return (
    (pattern.direction === undefined || pattern.direction === key.direction) &&
    (pattern.network === undefined || pattern.network === key.network) &&
    (pattern.cryptoCurrency === undefined || pattern.cryptoCurrency === key.cryptoCurrency) &&
    (pattern.paymentMethod === undefined || pattern.paymentMethod === key.paymentMethod)
  );
}

export type RouteResult = { ok: true; route: Route } | { ok: false; error: QuoteError & { code: 'corridor_unavailable' } };

/** The request fields that name a route, as the partner sent them (strings not yet checked). */
export interface RouteRequest {
  readonly direction: Direction;
  readonly cryptoCurrency: string;
  readonly network: string;
  readonly paymentMethod: string;
  readonly targetCurrency: string;
}

const fiatCurrencies = Object.keys(fiatDecimals) as FiatCurrency[];

const flowNames: Readonly<Record<Direction, string>> = { payout: 'Payouts', onramp: 'Onramps' };

function unavailable(reason: string): RouteResult {
  return { ok: false, error: quoteError('corridor_unavailable', reason) };
}

/**
 * Resolve a requested route, or say why it is not offered. Every unknown or unoffered value is
 * `corridor_unavailable` (legacy payment methods and planned currencies included); the shape of
 * the request (strings present) is the edge's `invalid_request`. Checks run from the most static
 * (vocabulary) to the most dynamic (configuration), so the reason names the first thing wrong.
 */
export function resolveRoute(config: CorridorConfig, request: RouteRequest): RouteResult {
  const { direction } = request;
  const text = JSON.stringify;
  if (!isOneOf(paymentMethods, request.paymentMethod)) {
    return unavailable(`Payment method ${text(request.paymentMethod)} is not supported; use one of ${paymentMethods.join(', ')}`);
  }
  if (isOneOf(plannedCurrencies, request.targetCurrency)) {
    return unavailable(`${request.targetCurrency} is not available yet`);
  }
  if (!isOneOf(fiatCurrencies, request.targetCurrency)) {
    return unavailable(`Currency ${text(request.targetCurrency)} is not supported`);
  }
  const paymentMethod = request.paymentMethod;
  const targetCurrency = request.targetCurrency;
  if (methodCurrency[paymentMethod] !== targetCurrency) {
    return unavailable(`Payment method ${paymentMethod} pays in ${methodCurrency[paymentMethod]}, not ${targetCurrency}`);
  }
  if (!isOneOf(networks, request.network)) {
    return unavailable(`Network ${text(request.network)} is not supported; use one of ${networks.join(', ')}`);
  }
  if (!isOneOf(cryptoAssets, request.cryptoCurrency)) {
    return unavailable(`Crypto currency ${text(request.cryptoCurrency)} is not supported`);
  }
  const key: RouteKey = { direction, network: request.network, cryptoCurrency: request.cryptoCurrency, paymentMethod };
  const label = `${key.cryptoCurrency} on ${key.network} via ${paymentMethod}`;
  if (!isSupported(key)) return unavailable(`${label} is not a supported ${direction} route`);
  return offeredRoute(config, key);
}

/**
 * Offered-route results per configuration. Resolving is on every quote's path, and its answer
 * depends only on the configuration (immutable once loaded) and the route key, so each supported
 * key is resolved (and its Route built and asserted) once per configuration object. Keyed weakly
 * by that object: a new configuration gets its own table, nothing needs invalidating, and the
 * table is bounded by the supported combinations (a few dozen).
 */
const offeredRouteTables = new WeakMap<CorridorConfig, Map<string, RouteResult>>();

/** The configuration-dependent half of resolution; `key` is a supported route. */
function offeredRoute(config: CorridorConfig, key: RouteKey): RouteResult {
  let table = offeredRouteTables.get(config);
  if (table === undefined) {
    table = new Map();
    offeredRouteTables.set(config, table);
  }
  const text = routeKeyText(key);
  const cached = table.get(text);
  if (cached !== undefined) return cached;
  // Frozen: one result object is shared by every quote priced on this route.
  const result = Object.freeze(resolveOfferedRoute(config, key));
  if (result.ok) Object.freeze(result.route);
  table.set(text, result);
  return result;
}

function resolveOfferedRoute(config: CorridorConfig, key: RouteKey): RouteResult {
  const label = `${key.cryptoCurrency} on ${key.network} via ${key.paymentMethod}`;
  if (!config.flows[key.direction].enabled) return unavailable(`${flowNames[key.direction]} are currently disabled`);
  const terms = config.terms[key.direction][key.paymentMethod];
  if (terms === undefined) return unavailable(`${key.paymentMethod} ${key.direction} is not offered`);
  const mint = config.mints[key.network][key.cryptoCurrency];
  if (mint === undefined || !mint.active) {
    return unavailable(`${key.cryptoCurrency} on ${key.network} is currently unavailable`);
  }
  if (config.unsupported.some((pattern) => matchesUnsupported(pattern, key))) {
    return unavailable(`${label} is currently unavailable`);
  }
  return { ok: true, route: buildRoute(key, mint, terms) };
}

function buildRoute(key: RouteKey, mint: MintConfig, terms: CorridorTerms): Route {
  const route: Route = {
    ...key,
    chainFamily: chainFamily[key.network],
    chainId: chainIds[key.network],
    targetCurrency: methodCurrency[key.paymentMethod],
    settlementAsset,
    mint,
    tokenDecimals: mint.decimals,
    minAmount: terms.minAmount,
    maxAmount: terms.maxAmount,
    fee: terms.feeByNetwork[key.network] ?? terms.fee,
    notify: notifyDescriptors[key.network],
    walletSession: walletSessions[key.network],
  };
  assertRoute(route);
  return route;
}

function assertRoute(route: Route): void {
  const fiatScale = fiatDecimals[route.targetCurrency];
  const boundOk = (bound: Decimal | null): boolean => bound === null || (isPositive(bound) && bound.scale === fiatScale);
  if (!boundOk(route.minAmount) || !boundOk(route.maxAmount)) {
    throw new Error(`corridor invariant violated: bounds of ${route.network}/${route.paymentMethod} must be positive at scale ${fiatScale}`);
  }
  if (!Number.isInteger(route.tokenDecimals) || route.tokenDecimals < 0 || route.tokenDecimals > 18) {
    throw new Error(`corridor invariant violated: token decimals ${route.tokenDecimals}`);
  }
}

/** The offered routes of one direction, in listing order. */
export function listRoutes(config: CorridorConfig, direction: Direction): Route[] {
  const routes: Route[] = [];
  for (const key of supportedRoutes(direction)) {
    const result = offeredRoute(config, key);
    if (result.ok) routes.push(result.route);
  }
  return routes;
}

/**
 * The corridors of `GET /public/corridors`: payout routes only. A list item has no direction
 * field, and an onramp PIX item would repeat a payout PIX item's key with other bounds
 * (docs/decisions-pricing.md).
 */
export function listCorridors(config: CorridorConfig): Route[] {
  return listRoutes(config, 'payout');
}

export interface CorridorJson {
  blockchain: Network;
  chainFamily: ChainFamily;
  chainId: string;
  cryptoCurrency: CryptoAsset;
  paymentMethod: PaymentMethod;
  targetCurrency: FiatCurrency;
  minAmount: number | null;
  maxAmount: number | null;
  notify: { endpoint: string | null; required: boolean };
  walletSession: { chainId: string; events: string[]; methods: string[]; namespace: string };
}

/** A corridor list item exactly as the spec's Corridor table. */
export function corridorToJson(route: Route): CorridorJson {
  return {
    blockchain: route.network,
    chainFamily: route.chainFamily,
    chainId: route.chainId,
    cryptoCurrency: route.cryptoCurrency,
    paymentMethod: route.paymentMethod,
    targetCurrency: route.targetCurrency,
    minAmount: route.minAmount === null ? null : toJsonNumber(route.minAmount),
    maxAmount: route.maxAmount === null ? null : toJsonNumber(route.maxAmount),
    notify: { endpoint: route.notify.endpoint, required: route.notify.required },
    walletSession: {
      chainId: route.walletSession.chainId,
      events: [...route.walletSession.events],
      methods: [...route.walletSession.methods],
      namespace: route.walletSession.namespace,
    },
  };
}

