// Shared helpers of the e2e tests: one HTTP call helper, test doubles for the edge capabilities
// owned by roles not wired yet (liquidity, deposit verification, reconciliation, chain
// availability, sandbox), and request bodies partners send.
import type { CryptoAsset, Network, PaymentMethod } from '../../src/domain/assets.ts';
import { decimal, type Decimal } from '../../src/domain/money.ts';
import type { EdgeDeps } from '../../src/service/edge-role.ts';
import type {
  ChainAvailability,
  DepositVerifier,
  LiquidityView,
  NotifyResult,
  ReconcileResult,
  Reconciler,
  SandboxDriver,
} from '../../src/service/ports.ts';
import type { ServiceContext } from '../../src/service/context.ts';
import { testPaymentContexts } from '../support/service-harness.ts';

export interface CallOptions {
  readonly key?: string;
  readonly bearer?: string;
  readonly ops?: string;
  readonly body?: unknown;
  readonly rawBody?: string | Uint8Array | FormData;
  readonly headers?: Record<string, string>;
  readonly idempotencyKey?: string;
}

export interface CallResult {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed JSON body (undefined when the body is not JSON). */
  readonly json: Record<string, unknown>;
}

export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  if (options.bearer !== undefined) headers['authorization'] = `Bearer ${options.bearer}`;
  if (options.ops !== undefined) headers['x-ops-api-key'] = options.ops;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let body: string | Uint8Array | FormData | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON (metrics, HEAD)
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Mutable stand-ins for the capabilities of the chains and rails roles, with call records. */
export interface TestCapabilities {
  readonly deps: EdgeDeps;
  /** Latest liquidity per method (null: none read yet) and availability. */
  liquidity: Partial<Record<PaymentMethod, Decimal | null>>;
  unavailable: Set<PaymentMethod>;
  inactive: Set<`${Network}/${CryptoAsset}`>;
  readonly notified: Array<{ partnerId: string; blockchain: Network; onChainTx: string; transactionId: string }>;
  notifyResult: NotifyResult;
  reconcileResult: ReconcileResult;
  readonly sandboxCalls: Array<{ helper: string; transactionId: string; amount: string | null }>;
  /** Set once the service context exists (the payment contexts read the corridors from it). */
  bind(ctx: ServiceContext): void;
}

export function testCapabilities(): TestCapabilities {
  let boundCtx: ServiceContext | null = null;
  const state: Omit<TestCapabilities, 'deps' | 'bind'> = {
    liquidity: { BREB: decimal(1_000_000_000n, 2), PIX: decimal(500_000_00n, 2) },
    unavailable: new Set(),
    inactive: new Set(),
    notified: [],
    notifyResult: { result: 'enqueued' },
    reconcileResult: { result: 'enqueued', transactionId: null, transactionStatus: 'AWAITING_PAYMENT', reason: null },
    sandboxCalls: [],
  };
  const liquidity: LiquidityView = {
    latest: (method) => {
      const amount = state.liquidity[method];
      return amount === undefined || amount === null ? null : { amount, readAtMs: 1_700_000_000_000 };
    },
    available: (method) => !state.unavailable.has(method),
  };
  const depositVerifier: DepositVerifier = {
    notify: (request) => {
      state.notified.push({ ...request });
      return Promise.resolve(state.notifyResult);
    },
  };
  const reconciler: Reconciler = {
    reconcile: (request) => Promise.resolve({ ...state.reconcileResult, transactionId: state.reconcileResult.transactionId ?? request.transactionId }),
  };
  const chainAvailability: ChainAvailability = { active: (network, asset) => !state.inactive.has(`${network}/${asset}`) };
  const sandbox: SandboxDriver = {
    deposit: (request) => {
      state.sandboxCalls.push({ helper: 'deposit', transactionId: request.transactionId, amount: request.amount === null ? null : String(request.amount.units) });
      return Promise.resolve({ ok: true, body: { deposited: true, transaction_id: request.transactionId } });
    },
    pixPayment: (request) => {
      state.sandboxCalls.push({ helper: 'pixPayment', transactionId: request.transactionId, amount: request.amount === null ? null : String(request.amount.units) });
      return Promise.resolve({ ok: false, status: 400, code: 'invalid_request', reason: 'Not an onramp transaction' });
    },
  };
  const capabilities = state as TestCapabilities;
  Object.assign(capabilities, {
    bind: (ctx: ServiceContext) => {
      boundCtx = ctx;
    },
    deps: {
      liquidity,
      depositVerifier,
      reconciler,
      chainAvailability,
      sandbox,
      paymentContexts: {
        forPayout: (quote, transactionId) => {
          if (boundCtx === null) throw new Error('test capabilities not bound to a context');
          return testPaymentContexts(boundCtx).forPayout(quote, transactionId);
        },
      },
    } satisfies EdgeDeps,
  });
  return capabilities;
}

const base58Alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58Encode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = value * 256n + BigInt(byte);
  let text = '';
  while (value > 0n) {
    text = (base58Alphabet[Number(value % 58n)] ?? '') + text;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    text = `1${text}`;
  }
  return text;
}

export const pngBytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...new Array<number>(64).fill(7)]);

export function kycForm(userId: string, overrides: Record<string, string | null> = {}, document: { bytes: Uint8Array; type: string } | null = { bytes: pngBytes, type: 'image/png' }): FormData {
  const fields: Record<string, string | null> = {
    userId,
    fullName: 'Maria da Silva',
    documentType: 'PASSPORT',
    documentNumber: 'AB123456',
    dateOfBirth: '1990-05-17',
    nationality: 'BR',
    city: 'São Paulo',
    address: 'Rua Augusta 100',
    email: 'maria@example.com',
    phone: '+55 11 99999-0000',
    ...overrides,
  };
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) if (value !== null) form.append(name, value);
  if (document !== null) form.append('document', new Blob([document.bytes], { type: document.type }), 'passport.png');
  return form;
}

export const payoutQuoteBody = {
  amount: 50_000,
  crypto_currency: 'USDC',
  network: 'STELLAR',
  payment_method: 'BREB',
  target_currency: 'COP',
} as const;
