// The partners file (PARTNERS_FILE): the operator's way to declare partners without the admin
// service. Validated at start; a bad file stops start-up with a message naming the field.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { readUserId } from '../domain/user-ids.ts';
import { feeSchema } from './corridors.ts';
import { checkKeyStrength } from './key-strength.ts';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of an API key');
/** Longest disabled user id in the file (before and after normalising). */
export const disabledUserIdCharsMax = 200;

/**
 * A disabled user id, read like every user id a request carries (src/domain/user-ids.ts): NFKC,
 * trimmed; an invisible or control character stops start-up naming the entry, since such an entry
 * could never match a request (they are refused) and was most likely pasted by mistake.
 */
const disabledUserId = z
  .string()
  .max(disabledUserIdCharsMax)
  .transform((value, context) => {
    const read = readUserId(value, disabledUserIdCharsMax);
    if (read.ok) return read.value;
    context.addIssue({ code: 'custom', message: read.reason });
    return z.NEVER;
  });

/**
 * The webhook signing secret: whoever knows it can forge our webhooks to the partner, so it must
 * carry ≥ 128 bits like every configured key (src/config/key-strength.ts). API keys are stored
 * only as hashes here, so their strength cannot be checked: operators hash keys of ≥ 128 bits.
 */
const webhookSecret = z
  .string()
  .max(256)
  .superRefine((value, context) => {
    const strength = checkKeyStrength('the webhook secret', value);
    if (!strength.ok) context.addIssue({ code: 'custom', message: strength.reason });
  });

/**
 * A portal administrator (docs/portal.md): an e-mail and the scrypt hash of a password, in the
 * format `npm run portal:hash-password` prints (src/portal/passwords.ts checks it again at start).
 * Never the password itself.
 */
export const portalAdminSchema = z.strictObject({
  email: z.email().max(254).transform((value) => value.trim().toLowerCase()),
  passwordScrypt: z.string().max(512).regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]{16,}\$[A-Za-z0-9+/=]{32,}$/, 'must be the output of npm run portal:hash-password'),
});

export const partnerSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ -'),
  name: z.string().min(1).max(200),
  apiKeySha256: z.array(sha256Hex).min(1).max(16),
  kycEnabled: z.boolean(),
  kybApproved: z.boolean(),
  disabledUsers: z.array(disabledUserId).max(100_000).default([]),
  webhook: z.strictObject({ url: z.url(), secret: webhookSecret }).optional(),
  fees: feeSchema.optional(),
  portalAdmins: z.array(portalAdminSchema).max(50).optional(),
});

export const partnersFileSchema = z.strictObject({
  partners: z.array(partnerSchema).max(10_000),
});

export type PartnerConfig = z.infer<typeof partnerSchema>;

/** Human-readable list of what is wrong, one line per issue, naming the field path. */
export function describeZodError(error: z.ZodError, source: string): string {
  return error.issues
    .map((issue) => `${source}: ${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('\n');
}

export function parsePartners(json: unknown, source: string): PartnerConfig[] {
  const parsed = partnersFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(describeZodError(parsed.error, source));
  const ids = new Set<string>();
  for (const partner of parsed.data.partners) {
    if (ids.has(partner.id)) throw new Error(`${source}: partners: duplicate id ${partner.id}`);
    ids.add(partner.id);
  }
  return parsed.data.partners;
}

export function loadPartnersFile(path: string): PartnerConfig[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: cannot read partners file: ${(error as Error).message}`);
  }
  return parsePartners(json, path);
}
