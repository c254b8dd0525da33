// One HTTP POST to a partner: node:http/https directly, so that
// - redirects are never followed (a 3xx is just a status; the policy calls it a misconfiguration);
// - the response body is read only up to `responseBytesMax`, then the socket is destroyed;
// - the body is dropped as it is read, except for a destination's test delivery, which keeps its
//   first `keepResponseBytes` (512) for an excerpt and stops reading there (what node already
//   received in its socket buffer is dropped with the socket);
// - the whole attempt (DNS, connect, TLS, response head, capped body) has one deadline, and two
//   shorter ones inside it: the connection must be ready (DNS, TCP, TLS) within `connectTimeoutMs`,
//   and the response head must start within `firstByteTimeoutMs` of that. An endpoint that accepts
//   and never answers (or never finishes its handshake) then costs a few seconds of a delivery slot,
//   not the whole attempt timeout;
// - in production the host is resolved once, every address is checked (url-policy.ts), and the
//   socket connects to a checked address (the `lookup` we hand to node answers from that list).
// No keep-alive: every attempt is its own connection (webhook volume per partner is modest, and a
// pooled socket would bypass the per-attempt address check).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { AttemptErrorCode, AttemptResult } from './policy.ts';
import { BlockedAddressError, checkDestinationUrl, hostnameOf, resolveCheckedAddresses, type ResolvedAddress, type UrlPolicyMode } from './url-policy.ts';

export interface TransportLimits {
  /** The whole attempt, DNS to last byte read. */
  readonly attemptTimeoutMs: number;
  /** From the start of the attempt until the connection is ready to send: DNS, TCP connect, TLS handshake. */
  readonly connectTimeoutMs: number;
  /** From the connection being ready until the response head arrives (the partner's time to answer). */
  readonly firstByteTimeoutMs: number;
  /** Bytes of the response body we read before closing the connection. */
  readonly responseBytesMax: number;
}

export const defaultTransportLimits: TransportLimits = { attemptTimeoutMs: 10_000, connectTimeoutMs: 3_000, firstByteTimeoutMs: 5_000, responseBytesMax: 4 * 1_024 };

/** Refuses limits that cannot work (a bug in the configuration, caught at start). */
export function checkTransportLimits(limits: TransportLimits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`transport ${name} must be a positive integer, got ${String(value)}`);
  }
}

export interface SendRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /**
   * Keep the first bytes of the answer, up to this many, and stop reading there (a destination's
   * test delivery shows an excerpt). Unset for live deliveries: their answers are read (bounded by
   * `responseBytesMax`) and dropped, never kept.
   */
  readonly keepResponseBytes?: number;
}

export interface SendOutcome {
  readonly result: AttemptResult;
  readonly durationMs: number;
  /**
   * Only with `keepResponseBytes`, once a response head arrived: the bytes read, and whether we
   * stopped before the answer ended (at the byte bound, the deadline, or a broken connection).
   */
  readonly response?: { readonly bytes: Buffer; readonly cut: boolean };
}

const tlsErrorPattern = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_)/;

function errorCodeOf(error: unknown): AttemptErrorCode {
  if (error instanceof BlockedAddressError) return 'blocked_address';
  const code = typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : '';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return 'connection_reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NODATA') return 'dns_failure';
  if (tlsErrorPattern.test(code)) return 'tls_error';
  return 'connection_error';
}

/** A `lookup` for node's socket that only ever answers with the pre-checked addresses. */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const all = typeof options === 'object' && options !== null && 'all' in options && options.all === true;
    const first = addresses[0];
    if (first === undefined) {
      callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '', 4);
      return;
    }
    if (all) {
      (callback as unknown as (error: Error | null, addresses: Array<{ address: string; family: number }>) => void)(
        null,
        addresses.map((entry) => ({ address: entry.address, family: entry.family })),
      );
      return;
    }
    callback(null, first.address, first.family);
  };
}

/** The first bytes of an answer, kept for a test delivery's excerpt. */
class KeptAnswer {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private headSeen = false;
  private ended = false;

  constructor(private readonly max: number) {}

  head(): void {
    this.headSeen = true;
  }

  add(chunk: Buffer): void {
    if (this.bytes >= this.max) return;
    // Only what fits is kept (a copy, so the socket's larger chunk is not held on to).
    const piece = Buffer.from(chunk.subarray(0, this.max - this.bytes));
    this.chunks.push(piece);
    this.bytes += piece.length;
  }

  /** The answer arrived whole. */
  end(): void {
    this.ended = true;
  }

  response(): Pick<SendOutcome, 'response'> {
    return this.headSeen ? { response: { bytes: Buffer.concat(this.chunks, this.bytes), cut: !this.ended } } : {};
  }
}

/** Sends one attempt. Never throws: every failure is an AttemptResult. */
export async function sendWebhook(request: SendRequest, mode: UrlPolicyMode, limits: TransportLimits = defaultTransportLimits): Promise<SendOutcome> {
  const startedAt = performance.now();
  const keep = request.keepResponseBytes;
  const kept = keep === undefined ? null : new KeptAnswer(keep);
  const done = (result: AttemptResult): SendOutcome => ({ result, durationMs: Math.max(0, Math.round(performance.now() - startedAt)), ...kept?.response() });
  const checked = checkDestinationUrl(request.url, mode);
  if (!checked.ok) return done({ kind: 'error', error: 'invalid_destination' });
  const url = checked.url;

  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    let clientRequest: http.ClientRequest | null = null;
    // One timer at a time is armed for the current phase (connect, then first byte); `deadline`
    // covers the whole attempt whatever the phase.
    let phaseTimer: NodeJS.Timeout | undefined;
    const settle = (result: AttemptResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearTimeout(phaseTimer);
      clientRequest?.destroy();
      resolve(done(result));
    };
    const armPhase = (timeoutMs: number): void => {
      clearTimeout(phaseTimer);
      if (settled) return;
      phaseTimer = setTimeout(() => settle({ kind: 'error', error: 'timeout' }), timeoutMs);
    };
    let status: number | null = null;
    let retryAfter: string | null = null;
    const deadline = setTimeout(() => {
      // A response head already received decides the outcome; the rest of the body is not needed.
      settle(status === null ? { kind: 'error', error: 'timeout' } : { kind: 'response', httpStatus: status, retryAfter });
    }, limits.attemptTimeoutMs);
    armPhase(limits.connectTimeoutMs);

    const start = async (): Promise<void> => {
      const host = hostnameOf(url);
      const addresses = mode.sandbox ? null : await resolveCheckedAddresses(host, mode);
      if (settled) return;
      const transport = url.protocol === 'https:' ? https : http;
      const options: http.RequestOptions = {
        method: 'POST',
        protocol: url.protocol,
        hostname: host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body, 'utf8')) },
        agent: false,
        ...(addresses === null ? {} : { lookup: pinnedLookup(addresses) }),
      };
      const req = transport.request(options, (res) => {
        clearTimeout(phaseTimer); // the head is here: only the whole-attempt deadline remains
        status = res.statusCode ?? 0;
        const header = res.headers['retry-after'];
        retryAfter = typeof header === 'string' ? header : null;
        kept?.head();
        let bytes = 0;
        // With an excerpt asked for, reading stops at its bound (never more than the usual cap).
        const readMax = keep === undefined ? limits.responseBytesMax : Math.min(keep, limits.responseBytesMax);
        const finish = (): void => settle({ kind: 'response', httpStatus: status ?? 0, retryAfter });
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          kept?.add(chunk);
          bytes += chunk.length;
          if (bytes >= readMax) finish();
        });
        res.on('end', () => {
          kept?.end();
          finish();
        });
        res.on('error', finish);
        res.on('close', finish);
      });
      clientRequest = req;
      // Ready = TCP connected, and for https the TLS handshake done; then the partner has
      // `firstByteTimeoutMs` to start its answer.
      req.once('socket', (socket) => {
        const readyEvent = url.protocol === 'https:' ? 'secureConnect' : 'connect';
        if (!socket.connecting && readyEvent === 'connect') armPhase(limits.firstByteTimeoutMs);
        else socket.once(readyEvent, () => armPhase(limits.firstByteTimeoutMs));
      });
      req.on('error', (error) => settle(status === null ? { kind: 'error', error: errorCodeOf(error) } : { kind: 'response', httpStatus: status, retryAfter }));
      req.end(request.body);
    };
    start().catch((error: unknown) => settle({ kind: 'error', error: errorCodeOf(error) }));
  });
}
