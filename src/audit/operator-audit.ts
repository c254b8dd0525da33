// The audit trail of operators' actions: one log line per admin RPC, per ops HTTP request and per
// payout operation over the payout link, whatever its outcome (a refused credential too). A stable
// shape that a log pipeline can select on `audit: true`:
//
//   { audit: true, channel, action, target, outcome, detail?, operator, peer, peerCertificate?, atMs }
//
// - who: `operator` is the id of the ops key presented (`ops-key:` + 12 hex digits of a hash that
//   is not the key's stored digest), null when no valid key was presented; `peer` is the network
//   peer; `peerCertificate` the subject of a client certificate (internal links). Never a key.
// - what: `action` (RPC name, or `METHOD /route`) and `target` (the identifiers the call named, as
//   `name=value` pairs; never free text, URLs or amounts).
// - when: `atMs` from the service's clock (pino's `time` is there too).
// - how it ended: `outcome` ok | refused (the call was understood and declined) | unauthenticated |
//   unavailable (a dependency was away) | failed (a bug); `detail` the gRPC status or HTTP status.
// Written at info, also when LOG_LEVEL is warn or error (an audit trail that a log level can switch
// off is not one); only `silent` silences it.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';

export type AuditChannel = 'admin-grpc' | 'ops-http' | 'payout-link';
export type AuditOutcome = 'ok' | 'refused' | 'unauthenticated' | 'unavailable' | 'failed';

export interface OperatorAction {
  readonly channel: AuditChannel;
  readonly action: string;
  readonly target: string;
  readonly outcome: AuditOutcome;
  readonly detail?: string;
  readonly operator: string | null;
  readonly peer: string;
  readonly peerCertificate?: string;
}

export interface AuditLog {
  record(action: OperatorAction): void;
}

/** Bounds on what an operator's input can put in a line. */
export const targetValueCharsMax = 128;
export const targetFieldsMax = 8;
const infoLevel = 30;

/**
 * Which ops key acted, without the key: a hash of the key under its own label (so the id is not
 * the SHA-256 digest a key ring keeps), shortened so it names a key but cannot verify a guess.
 */
export function operatorKeyId(opsKey: string): string {
  return `ops-key:${createHash('sha256').update(`operator-key-id\0${opsKey}`, 'utf8').digest('hex').slice(0, 12)}`;
}

/** `name=value` for each of `names` the request carries (strings and numbers only), bounded. */
export function auditTarget(fields: Readonly<Record<string, unknown>>, names: readonly string[]): string {
  const pairs: string[] = [];
  for (const name of names) {
    if (pairs.length >= targetFieldsMax) break;
    const value = fields[name];
    if (typeof value !== 'string' && typeof value !== 'number') continue;
    const text = String(value).trim().replace(/\s+/g, '_').slice(0, targetValueCharsMax);
    if (text !== '') pairs.push(`${name}=${text}`);
  }
  return pairs.join(' ');
}

/** `CN=…,O=…` of a certificate subject as node:tls reports it. */
export function certificateSubject(subject: Readonly<Record<string, string | string[] | undefined>> | undefined): string | undefined {
  if (subject === undefined) return undefined;
  const parts = Object.entries(subject)
    .filter((entry): entry is [string, string | string[]] => entry[1] !== undefined)
    .map(([name, value]) => `${name}=${Array.isArray(value) ? value.join('+') : value}`)
    .sort((a, b) => (a.startsWith('CN=') ? -1 : b.startsWith('CN=') ? 1 : a.localeCompare(b)));
  return parts.length === 0 ? undefined : parts.join(',').slice(0, 256);
}

export function createAuditLog(log: Logger, clock: { nowMs(): number }): AuditLog {
  const quieter = log.level !== 'silent' && log.levelVal > infoLevel;
  const audit = log.child({ audit: true }, quieter ? { level: 'info' } : {});
  return {
    record(action) {
      audit.info({ ...action, atMs: clock.nowMs() }, 'operator action');
    },
  };
}
