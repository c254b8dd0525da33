// Environment configuration read by every role (the DESIGN's configuration contract), validated at
// start: a bad value stops start-up with a message naming the variable.
import { z } from 'zod';
import { describeZodError } from './partners.ts';
import { checkKeyStrength } from './key-strength.ts';
import { parseCidrList } from '../domain/ip-address.ts';
import { linkBindsIssues } from './link-binds.ts';
import { productionPiecesRefusal } from './production-pieces.ts';

export const roles = ['all', 'edge', 'shard', 'watcher', 'payout', 'webhooks', 'admin'] as const;
export type Role = (typeof roles)[number];

/** The one value of SANDBOX_WITH_MAINNET: sandbox mode may start next to a mainnet chain (src/chains/sandbox-guard.ts). */
export const sandboxWithMainnetConsent = 'i-understand';

const flag = z.enum(['0', '1', 'true', 'false']).transform((value) => value === '1' || value === 'true');
const onOff = z.enum(['on', 'off', '1', '0', 'true', 'false']).transform((value) => value === 'on' || value === '1' || value === 'true');
/** A file named by the environment (certificates, keys): a path, read at start. */
const filePath = z.string().min(1).max(4_096);

/**
 * A key the service reads from the environment: at most 256 characters and at least 128 bits of
 * estimated entropy (src/config/key-strength.ts); the refusal names the variable, not the value.
 */
const strongKey = (name: string) =>
  z
    .string()
    .max(256)
    .superRefine((value, context) => {
      const strength = checkKeyStrength(name, value);
      if (!strength.ok) context.addIssue({ code: 'custom', message: strength.reason });
    });

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  ROLE: z.enum(roles).default('all'),
  /** The host name this process reports to its deployment (default: the OS's); see src/service/deployment-membership.ts. */
  SERVICE_HOSTNAME: z.string().min(1).max(255).optional(),
  DEMO_API_KEY: strongKey('DEMO_API_KEY').optional(),
  OPS_API_KEY: strongKey('OPS_API_KEY').optional(),
  /** The sandbox demo partner's portal administrator's password (docs/portal.md); random at each start when unset. */
  DEMO_PORTAL_PASSWORD: z.string().min(12, 'must be at least 12 characters').max(1024).optional(),
  REDIS_URL: z.string().regex(/^rediss?(\+cluster)?:\/\//, 'must be a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL').optional(),
  MONGODB_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL').optional(),
  MONGODB_DB: z.string().min(1).default('payments'),
  DATA_DIR: z.string().min(1).default('./data'),
  PARTNERS_FILE: z.string().min(1).optional(),
  CORRIDORS_FILE: z.string().min(1).optional(),
  /** Caps and thresholds (src/config/limits.ts); unset: the spec's defaults. */
  LIMITS_FILE: z.string().min(1).optional(),
  CHAINS_FILE: z.string().min(1).optional(),
  // Corridor health (docs/corridor-health.md; defaults: src/domain/corridor-health.ts `defaultHealthThresholds`).
  CORRIDOR_HEALTH_WINDOW_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(15 * 60_000),
  CORRIDOR_HEALTH_RECENT_PAYOUTS: z.coerce.number().int().min(1).max(1_000).default(20),
  CORRIDOR_HEALTH_MIN_PAYOUTS: z.coerce.number().int().min(1).max(1_000).default(5),
  CORRIDOR_HEALTH_FAILURE_SHARE_DEGRADED: z.coerce.number().gt(0).max(1).default(0.25),
  CORRIDOR_HEALTH_FAILURE_SHARE_RECOVERED: z.coerce.number().min(0).max(1).default(0.1),
  CORRIDOR_HEALTH_P95_DEGRADED_MS: z.coerce.number().int().min(1).max(86_400_000).default(10 * 60_000),
  CORRIDOR_HEALTH_P95_RECOVERED_MS: z.coerce.number().int().min(0).max(86_400_000).default(5 * 60_000),
  /** How long one computed answer serves every request (GET /public/corridors/health, /metrics). */
  CORRIDOR_HEALTH_CACHE_MS: z.coerce.number().int().min(100).max(300_000).default(5_000),
  /** Liquidity is `low` below this many of the corridor's largest payouts. */
  CORRIDOR_HEALTH_LOW_LIQUIDITY_MULTIPLE: z.coerce.number().int().min(1).max(1_000_000).default(10),
  /** The settlement receipts' Ed25519 signing keys (src/config/receipt-keys.ts); unset: generated in sandbox, none otherwise. */
  RECEIPT_SIGNING_KEYS_FILE: filePath.optional(),
  SHARDS: z.coerce.number().int().min(1).max(16_384).default(64),
  SANDBOX: flag.optional(),
  SANDBOX_WITH_MAINNET: z.literal(sandboxWithMainnetConsent, { error: 'the only accepted value is i-understand (sandbox mode next to a mainnet chain); leave it unset otherwise' }).optional(),
  KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]*$/, 'letters, digits, : _ - only (no braces)')
    .default('pay:'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65_535).default(50051),
  /** Per-partner token bucket at the edge (429 with Retry-After beyond it). */
  EDGE_RATE_LIMIT_PER_SECOND: z.coerce.number().positive().max(1_000_000).default(200),
  EDGE_RATE_LIMIT_BURST: z.coerce.number().int().positive().max(1_000_000).default(400),
  /**
   * Failed authentications per client address (partner and ops keys over HTTP, the admin gRPC
   * service): refilled per minute, and the bucket size. Beyond it: 429 / RESOURCE_EXHAUSTED with a
   * retry delay instead of 401 (a correct key is never refused). docs/security.md.
   */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().positive().max(1_000_000).default(60),
  AUTH_FAILURES_BURST: z.coerce.number().int().positive().max(1_000_000).default(20),
  /**
   * Requests per client address on the routes without credentials (corridors, health): 429 beyond
   * it. Generous, so a load balancer's or an orchestrator's probes from one address never meet it.
   */
  PUBLIC_RATE_LIMIT_PER_SECOND: z.coerce.number().positive().max(1_000_000).default(50),
  PUBLIC_RATE_LIMIT_BURST: z.coerce.number().int().positive().max(1_000_000).default(200),
  /**
   * The load balancers / reverse proxies in front of the edge (comma-separated IPs or CIDR ranges):
   * only from these is X-Forwarded-For believed. Empty (default): the TCP peer is the client.
   */
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .superRefine((value, context) => {
      const parsed = parseCidrList(value);
      if (!parsed.ok) context.addIssue({ code: 'custom', message: parsed.reason });
    }),
  /**
   * Per-partner budget of POST /payments/notify calls that cannot fund their transaction (strays,
   * late deposits, repeats, transfers that do not validate): refilled per minute, and its size.
   * Empty: the partner's notifies get 429 with Retry-After (docs/api.md, "Notify budget").
   */
  NOTIFY_MISMATCH_PER_MINUTE: z.coerce.number().positive().max(1_000_000).default(2),
  NOTIFY_MISMATCH_BURST: z.coerce.number().int().positive().max(1_000_000).default(10),
  /**
   * POST /kyc submissions a day per user of a partner, and per partner (every attempt counts):
   * 429 `rate_limited` with Retry-After beyond them (src/edge/kyc-quota.ts, docs/api.md).
   */
  /**
   * Encryption at rest of KYC documents and personal fields (src/store/data-keys.ts): the master
   * key (32 bytes, base64 or hex; required when SANDBOX=0), its id, and retired keys still read
   * (`id:key,…`). docs/operations.md "The data key".
   */
  DATA_ENCRYPTION_KEY: z.string().max(200).optional(),
  DATA_ENCRYPTION_KEY_ID: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, '1-64 of A-Z a-z 0-9 . _ -').optional(),
  DATA_ENCRYPTION_RETIRED_KEYS: z.string().max(20_000).optional(),
  /**
   * Retention (src/service/retention.ts, docs/operations.md "Retention"): idempotency records are
   * kept this many hours after their request started (a retry with the key after that is a new
   * request); unclaimed quotes this long after their expiry; webhook events and deliveries this
   * many days. The sweep runs with the shard role every RETENTION_SWEEP_INTERVAL_MS.
   */
  /**
   * Quote offers (src/ports/quote-offers.ts, docs/actors.md "Quotes are offers"): a partner's quotes
   * still valid at once, at most (past it, a quote is refused with `quote_unavailable`, retryable);
   * and how long a quote nobody accepted is kept after its expiry, so that accepting it answers
   * `quote_expired` rather than `quote_not_found`.
   */
  QUOTE_OFFERS_PER_PARTNER_MAX: z.coerce.number().int().min(1).max(10_000_000).default(20_000),
  QUOTE_OFFER_GRACE_MS: z.coerce.number().int().min(0).max(7 * 24 * 3_600_000).default(3_600_000),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().int().min(1).max(24 * 366).default(72),
  QUOTE_RETENTION_GRACE_HOURS: z.coerce.number().int().min(1).max(24 * 366).default(24),
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3_660).default(90),
  RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().min(1_000).max(24 * 3_600_000).default(60_000),
  KYC_SUBMISSIONS_PER_USER_PER_DAY: z.coerce.number().int().min(1).max(1_000_000).default(10),
  KYC_SUBMISSIONS_PER_PARTNER_PER_DAY: z.coerce.number().int().min(1).max(100_000_000).default(10_000),
  /**
   * Graceful shutdown (SIGTERM): how long a role may take to finish its work in flight (the edge's
   * requests, a shard worker's batch, a payout or webhook attempt) before it stops anyway.
   */
  /**
   * Batches a shard worker applies at once (reading the next while the previous one's write is
   * syncing; docs/actors.md "Batches in flight"). 1 = strictly one at a time.
   */
  SHARD_BATCHES_IN_FLIGHT: z.coerce.number().int().min(1).max(16).default(2),
  /**
   * Commands between actors of one shard worker applied in the sender's own all-or-nothing commit
   * (docs/actors.md "Linked steps"). On MongoDB that commit is one multi-document transaction per
   * batch; a deployment that sees it conflict can turn it off (`off`: commands travel as rows).
   */
  SHARD_LINKED_STEPS: onOff.default(true),
  /**
   * Actors a shard worker keeps in memory at most, by count and by estimated bytes
   * (src/actors/actor-memory.ts); past either, the least recently used leave memory (their
   * snapshots are the truth). Bytes unset: 40 % of the process's V8 heap limit
   * (`--max-old-space-size`), so the cap follows the memory the deployment gives the process.
   */
  SHARD_ACTORS_IN_MEMORY_MAX: z.coerce.number().int().min(100).max(10_000_000).default(100_000),
  SHARD_ACTOR_MEMORY_MAX_BYTES: z.coerce.number().int().min(1_000_000).max(64 * 1024 ** 3).optional(),
  /**
   * Shard workers hold their shards' leases for this long and renew them every third of it; a
   * worker that died loses its shards within it. The edge uses it as the grace for a shard without
   * an owner (docs/operations.md "What /readyz means"). The same value in every process.
   */
  SHARD_LEASE_TTL_MS: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
  /**
   * How long the edge waits for an actor's reply before it answers 503 (the command may still be
   * applied: a retry with the same Idempotency-Key is safe). Below the edge's 30 s handler timeout.
   */
  EDGE_ASK_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(25_000).default(10_000),
  /**
   * Fair shares at the edge (docs/edge-http.md "Fair shares"): what one partner may hold at once
   * (429 beyond it), what the whole edge may hold (503 beyond it), what all unauthenticated
   * requests together may hold; and the slowest a request body may arrive (408 beyond it).
   */
  EDGE_PARTNER_REQUESTS_IN_FLIGHT_MAX: z.coerce.number().int().min(1).max(100_000).default(256),
  EDGE_PARTNER_BODY_BYTES_IN_FLIGHT_MAX: z.coerce.number().int().min(64 * 1024).max(1024 * 1024 * 1024).default(8 * 1024 * 1024),
  EDGE_PARTNER_UPLOADS_IN_FLIGHT_MAX: z.coerce.number().int().min(1).max(1_000).default(4),
  EDGE_ANONYMOUS_REQUESTS_IN_FLIGHT_MAX: z.coerce.number().int().min(1).max(100_000).default(128),
  EDGE_BODY_BYTES_IN_FLIGHT_MAX: z.coerce.number().int().min(64 * 1024).max(1024 * 1024 * 1024).default(64 * 1024 * 1024),
  EDGE_UPLOADS_IN_FLIGHT_MAX: z.coerce.number().int().min(1).max(10_000).default(32),
  EDGE_BODY_BYTES_PER_SECOND_MIN: z.coerce.number().int().min(0).max(100 * 1024 * 1024).default(16 * 1024),
  /** Below uWS's 10 s idle timeout, which would close a silent connection without an answer. */
  EDGE_BODY_RATE_WINDOW_MS: z.coerce.number().int().min(100).max(8_000).default(5_000),
  /**
   * The watcher's deposit pollers (Solana, Celo; src/chains/deposit-poller.ts): the pause between
   * rounds that look for deposits nobody notified, and how long after its expiry an unpaid
   * transaction's address is still looked at (a late deposit is found and refunded).
   */
  DEPOSIT_POLL_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
  DEPOSIT_LATE_WATCH_MS: z.coerce.number().int().min(0).max(30 * 24 * 3_600_000).default(24 * 3_600_000),
  /**
   * Embedded store: write values as plain msgpack maps (about twice as fast to encode and decode as
   * the default records). Turn on only when no process of a release older than this one opens the
   * store (they would read the new values wrongly); docs/store.md "Value encoding".
   */
  STORE_PLAIN_MAPS: flag.default(false),
  /**
   * The health listener (src/service/health-listener.ts): GET /healthz and /readyz for any role,
   * on HOST. Unset: none (the edge has both on PORT anyway). 0 picks a free port (printed).
   */
  HEALTH_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  /** A role's loop with no successful round for this long makes /readyz answer 503 (see docs/operations.md). */
  HEALTH_UNREADY_AFTER_MS: z.coerce.number().int().min(1_000).max(600_000).default(15_000),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
  /**
   * Webhook attempts (docs/webhooks.md "Retries"): the connection must be ready (DNS, TCP, TLS)
   * within WEBHOOK_CONNECT_TIMEOUT_MS, and the partner must start answering within
   * WEBHOOK_FIRST_BYTE_TIMEOUT_MS of that; the whole attempt stays bounded by 10 s.
   */
  WEBHOOK_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(3_000),
  WEBHOOK_FIRST_BYTE_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(5_000),
  /** The payout role's internal gRPC link (Payout, Liquidity); PAYOUT_GRPC_URL is where other roles reach it. */
  PAYOUT_GRPC_PORT: z.coerce.number().int().min(0).max(65_535).default(50052),
  PAYOUT_GRPC_URL: z.string().regex(/^[A-Za-z0-9.:[\]_-]+$/, 'host:port').optional(),
  /** The watcher role's internal gRPC link (Chains); CHAINS_GRPC_URL is where an edge/admin started apart reaches it. */
  CHAINS_GRPC_PORT: z.coerce.number().int().min(0).max(65_535).default(50053),
  CHAINS_GRPC_URL: z.string().regex(/^[A-Za-z0-9.:[\]_-]+$/, 'host:port').optional(),
  /**
   * The admin service and the internal links have their own binds, independent of the edge's HOST
   * (docs/security.md, "Internal links and the admin service"): loopback unless said otherwise.
   */
  ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  INTERNAL_HOST: z.string().min(1).default('127.0.0.1'),
  /** TLS on the admin service (its certificate and key); `off` is allowed on a loopback ADMIN_HOST only. */
  ADMIN_TLS: onOff.default(true),
  ADMIN_TLS_CERT_FILE: filePath.optional(),
  ADMIN_TLS_KEY_FILE: filePath.optional(),
  /**
   * Mutual TLS on the internal links: the CA that signs every role's identity, and this process's
   * certificate and key (server and client). `off` is allowed with loopback binds and addresses
   * only, and then needs INTERNAL_LINK_KEY.
   */
  INTERNAL_TLS: onOff.default(true),
  INTERNAL_TLS_CA_FILE: filePath.optional(),
  INTERNAL_TLS_CERT_FILE: filePath.optional(),
  INTERNAL_TLS_KEY_FILE: filePath.optional(),
  /** The name the link clients expect in the server's certificate, when it is not the host they dial. */
  INTERNAL_TLS_SERVER_NAME: z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'a DNS name').optional(),
  /** A second credential of the internal links (metadata `x-internal-link-key`); never the ops key. */
  INTERNAL_LINK_KEY: z.string().min(32).max(256).regex(/^[\x21-\x7e]+$/, 'visible ASCII, no spaces').optional(),
});

export type EnvConfig = z.infer<typeof envSchema> & { readonly sandbox: boolean };

/** Reads the environment (and an optional role given as the first CLI argument). */
export function readEnv(env: NodeJS.ProcessEnv, argv: readonly string[] = []): EnvConfig {
  const cliRole = argv[0];
  const parsed = envSchema
    .superRefine((config, issues) => {
      for (const issue of linkBindsIssues(config)) issues.addIssue({ code: 'custom', path: [issue.variable], message: issue.message });
      // Hysteresis: a mark to recover at above the mark to degrade at would flap on every payout.
      if (config.CORRIDOR_HEALTH_FAILURE_SHARE_RECOVERED > config.CORRIDOR_HEALTH_FAILURE_SHARE_DEGRADED) {
        issues.addIssue({ code: 'custom', path: ['CORRIDOR_HEALTH_FAILURE_SHARE_RECOVERED'], message: 'must not exceed CORRIDOR_HEALTH_FAILURE_SHARE_DEGRADED' });
      }
      if (config.CORRIDOR_HEALTH_P95_RECOVERED_MS > config.CORRIDOR_HEALTH_P95_DEGRADED_MS) {
        issues.addIssue({ code: 'custom', path: ['CORRIDOR_HEALTH_P95_RECOVERED_MS'], message: 'must not exceed CORRIDOR_HEALTH_P95_DEGRADED_MS' });
      }
      // Outside sandbox mode, a role run apart names every production piece it lacks (src/config/production-pieces.ts).
      const refusal = productionPiecesRefusal({ ...config, sandbox: sandboxMode(config) });
      if (refusal !== null) issues.addIssue({ code: 'custom', path: ['SANDBOX'], message: refusal });
    })
    .safeParse({ ...env, ...(cliRole !== undefined ? { ROLE: cliRole } : {}) });
  if (!parsed.success) throw new Error(describeZodError(parsed.error, 'environment'));
  return { ...parsed.data, sandbox: sandboxMode(parsed.data) };
}

/** Sandbox by default when no real chain or rail is configured (DESIGN's configuration contract). */
function sandboxMode(config: { readonly SANDBOX?: boolean | undefined; readonly CHAINS_FILE?: string | undefined }): boolean {
  return config.SANDBOX ?? config.CHAINS_FILE === undefined;
}
