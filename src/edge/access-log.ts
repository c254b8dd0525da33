// The edge's access log: one pino line per request at info, built from a fixed set of fields.
// Never logged: API keys and other credentials, webhook secrets, tax ids, request or response
// bodies, KYC documents, query strings (a PIX QR payload carries a tax id) and raw paths of
// unmatched requests — the route *pattern* is logged instead of the path. The redact list is a
// second line of defence for any other log line that carries request headers.
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export interface AccessLogEntry {
  readonly method: string;
  /** Route pattern (`/transaction/:id`), or null when no route matched. */
  readonly route: string | null;
  /** Status sent, or null when the client went away before an answer. */
  readonly status: number | null;
  readonly durationMs: number;
  readonly requestId: string;
  readonly partnerId: string | null;
  /** Body bytes received (counted, not logged). */
  readonly requestBytes: number;
  readonly aborted: boolean;
}

/** Header paths censored in every log line of a logger made by `createEdgeLogger`. */
export const redactedHeaderNames = ['x-api-key', 'authorization', 'x-ops-api-key', 'x-service-webhook-secret', 'cookie'] as const;

export const accessLogRedactPaths: readonly string[] = redactedHeaderNames.flatMap((name) => [
  `headers["${name}"]`,
  `req.headers["${name}"]`,
  `request.headers["${name}"]`,
  `*.headers["${name}"]`,
]);

export function writeAccessLog(logger: Logger, entry: AccessLogEntry): void {
  logger.info(
    {
      method: entry.method,
      route: entry.route,
      status: entry.status,
      durationMs: Math.round(entry.durationMs * 100) / 100,
      requestId: entry.requestId,
      partnerId: entry.partnerId,
      requestBytes: entry.requestBytes,
      aborted: entry.aborted,
    },
    'request',
  );
}

/** A pino logger with the edge's redact list; `destination` for tests (defaults to stdout). */
export function createEdgeLogger(options: { readonly level?: string; readonly destination?: DestinationStream } = {}): Logger {
  const loggerOptions: LoggerOptions = {
    level: options.level ?? 'info',
    redact: { paths: [...accessLogRedactPaths], censor: '[redacted]' },
  };
  return options.destination === undefined ? pino(loggerOptions) : pino(loggerOptions, options.destination);
}
