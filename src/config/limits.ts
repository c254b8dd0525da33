// Limits configuration: the schema an operator's file is validated with, and the defaults (the
// spec's Limits section). Every field may be omitted and takes its default; `null` on a cap means
// "no internal cap"; unknown fields are rejected. Amounts are decimal strings or JSON numbers and
// are read exactly (src/domain/money.ts): method caps at the method currency's decimals, the
// KYC/KYB thresholds (source asset, 1:1 USD) and the chain refund floors at the most decimals any
// supported token has.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { defaultTokenDecimals, networks, paymentMethods } from '../domain/assets.ts';
import type { Network, PaymentMethod } from '../domain/assets.ts';
import type { LimitsConfig } from '../domain/limits.ts';
import { methodCurrencyDecimals } from '../domain/limits.ts';
import { parseAmount } from '../domain/money.ts';

/** Scale the source-asset thresholds are read at: the largest token decimals (Stellar's 7). */
export const sourceThresholdScale = Math.max(
  ...networks.flatMap((network) => Object.values(defaultTokenDecimals[network])),
);

type AmountInput = string | number;

interface MethodCapsInput {
  readonly transactionAmountMax: AmountInput | null;
  readonly userDailyAmountMax: AmountInput | null;
  readonly methodDailyAmountMax: AmountInput | null;
  readonly userDailyCountMax: number | null;
  readonly dayUtcOffsetMinutes: number;
}

/** The defaults, in the same form an operator writes them. */
export const defaultLimitsConfigInput = {
  methods: {
    BREB: {
      transactionAmountMax: '5000000',
      userDailyAmountMax: '25000000',
      methodDailyAmountMax: '25000000',
      userDailyCountMax: 15,
      dayUtcOffsetMinutes: -5 * 60, // Colombia, UTC−5, no DST
    },
    PIX: {
      transactionAmountMax: null,
      userDailyAmountMax: null,
      methodDailyAmountMax: null,
      userDailyCountMax: null,
      dayUtcOffsetMinutes: -3 * 60, // Brazil (Brasília), UTC−3, no DST
    },
  },
  kycFreeMonthlyVolumeMax: '25',
  kybUnapprovedCompletedTotalMax: '100',
  // The smallest deposit refunded automatically (token units; docs/decisions-states.md, "Dust below
  // the refund floor"): at least the worst cost of one refund, with a margin.
  chainRefundFloors: {
    // Fee bid ≤ 0.001 XLM; no account is created for the sender.
    STELLAR: '0.1',
    // ≈ 0.000005 SOL fee + ≈ 0.00204 SOL rent when the refund creates the sender's token account:
    // ≈ 0.51 USD at 250 USD/SOL.
    SOLANA: '1',
    // An ERC-20 transfer: ≈ 65,000 gas, well under 0.01 USD at Celo's gas prices.
    CELO: '0.1',
  },
} as const satisfies {
  methods: Record<PaymentMethod, MethodCapsInput>;
  kycFreeMonthlyVolumeMax: AmountInput;
  kybUnapprovedCompletedTotalMax: AmountInput;
  chainRefundFloors: Record<Network, AmountInput>;
};

/** A non-negative exact amount at `scale`, as a decimal string or a JSON number. */
function amountSchema(scale: number) {
  return z.union([z.string(), z.number()]).transform((input, context) => {
    const parsed = parseAmount(input, scale, { label: 'amount', allowZero: true });
    if (parsed.ok) return parsed.value;
    context.issues.push({ code: 'custom', message: parsed.error.reason, input });
    return z.NEVER;
  });
}

function countSchema() {
  return z.number().int().nonnegative().max(1_000_000);
}

function methodCapsSchema(method: PaymentMethod) {
  const defaults = defaultLimitsConfigInput.methods[method];
  const amount = amountSchema(methodCurrencyDecimals(method)).nullable();
  return z
    .strictObject({
      transactionAmountMax: amount.prefault(defaults.transactionAmountMax),
      userDailyAmountMax: amount.prefault(defaults.userDailyAmountMax),
      methodDailyAmountMax: amount.prefault(defaults.methodDailyAmountMax),
      userDailyCountMax: countSchema().nullable().prefault(defaults.userDailyCountMax),
      dayUtcOffsetMinutes: z.number().int().min(-14 * 60).max(14 * 60).prefault(defaults.dayUtcOffsetMinutes),
    })
    .prefault({});
}

const methodsShape = Object.fromEntries(paymentMethods.map((method) => [method, methodCapsSchema(method)])) as {
  [M in PaymentMethod]: ReturnType<typeof methodCapsSchema>;
};

function refundFloorSchema(network: Network) {
  return amountSchema(sourceThresholdScale).prefault(defaultLimitsConfigInput.chainRefundFloors[network]);
}

const refundFloorsShape = Object.fromEntries(networks.map((network) => [network, refundFloorSchema(network)])) as {
  [N in Network]: ReturnType<typeof refundFloorSchema>;
};

export const limitsConfigSchema = z.strictObject({
  methods: z.strictObject(methodsShape).prefault({}),
  kycFreeMonthlyVolumeMax: amountSchema(sourceThresholdScale).prefault(defaultLimitsConfigInput.kycFreeMonthlyVolumeMax),
  kybUnapprovedCompletedTotalMax: amountSchema(sourceThresholdScale).prefault(
    defaultLimitsConfigInput.kybUnapprovedCompletedTotalMax,
  ),
  chainRefundFloors: z.strictObject(refundFloorsShape).prefault({}),
});

export type LimitsConfigInput = z.input<typeof limitsConfigSchema>;

/** Validate an operator's limits section; throws with every offending field named. */
export function parseLimitsConfig(input: unknown): LimitsConfig {
  const result = limitsConfigSchema.safeParse(input);
  if (!result.success) throw new Error(`invalid limits configuration:\n${z.prettifyError(result.error)}`);
  return result.data; // typed as LimitsConfig: the schema's output must match the domain type
}

export const defaultLimitsConfig: LimitsConfig = parseLimitsConfig(defaultLimitsConfigInput);

/** The operator's limits file (`LIMITS_FILE`): JSON in the shape of `defaultLimitsConfigInput`; omitted fields keep their defaults. */
export function loadLimitsFile(path: string): LimitsConfig {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: cannot read limits file: ${(error as Error).message}`);
  }
  return parseLimitsConfig(json);
}
