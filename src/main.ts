// Composition root: `node src/main.ts [role]` (or ROLE=…). `all` — every role in one process,
// embedded bus and store, sandbox chains and rails — is the default and needs no configuration.
import { readEnv } from './config/env.ts';
import { demoPartnerId } from './ports/partners.ts';
import { demoPortalAdminEmail } from './portal/index.ts';
import { reportGeneratedKeys } from './service/generated-keys.ts';
import { startService, type RunningService } from './service/service.ts';

async function main(): Promise<void> {
  const env = readEnv(process.env, process.argv.slice(2));
  const service = await startService(env);
  // Before the banner: whoever reads it (an operator's script, a supervisor, a test) may signal at
  // once, and a SIGTERM that arrives before a handler exists takes the default action: the
  // process dies on the spot, without the graceful stop (seen under load: exit by signal, no stop).
  installShutdown(service, env.SHUTDOWN_GRACE_MS);
  const { ctx, port } = service;
  const lines = [`role ${env.ROLE}; bus ${env.REDIS_URL ? 'redis' : 'in-process'}; store ${env.MONGODB_URL ? 'mongodb' : `embedded (${env.DATA_DIR})`}; sandbox ${env.sandbox ? 'on' : 'off'}`];
  if (port !== null) {
    lines.push(`edge listening on http://${env.HOST}:${port}`);
    lines.push(`API reference http://${env.HOST}:${port}/docs (OpenAPI 3.1: /openapi.json)`);
  }
  if (service.healthPort !== null) lines.push(`health on http://${env.HOST}:${service.healthPort} (/healthz, /readyz)`);
  if (service.adminPort !== null) {
    lines.push(
      env.ADMIN_TLS
        ? `admin gRPC over TLS on ${env.ADMIN_HOST}:${service.adminPort} (ADMIN_TLS_CA_FILE=… npm run admin -- help)`
        : `admin gRPC WITHOUT TLS on ${env.ADMIN_HOST}:${service.adminPort}, this host only (ADMIN_TLS=off npm run admin -- help)`,
    );
  }
  // Shown once to whoever started the service, never to a log: printed on a terminal, else written
  // to a 0600 file under DATA_DIR whose path is printed (src/service/generated-keys.ts).
  const keys = reportGeneratedKeys(ctx.generatedKeys, { isTty: process.stdout.isTTY === true, dataDir: env.DATA_DIR, role: env.ROLE });
  lines.push(...keys.lines);
  // The admin CLI's commands take the partner id, not its key: name the demo partner's.
  if (env.sandbox) lines.push(`demo partner id: ${demoPartnerId} (npm run admin -- deliveries ${demoPartnerId})`);
  // The partner portal (docs/portal.md): the demo partner's administrator signs in with the password above.
  if (port !== null) {
    lines.push(`partner portal on http://${env.HOST}:${port}/portal${env.sandbox ? ` (demo administrator: ${demoPortalAdminEmail}, password: DEMO_PORTAL_PASSWORD${env.DEMO_PORTAL_PASSWORD === undefined ? ' above' : ' as set'})` : ''}`);
  }
  if (port !== null) {
    lines.push('try:', `  curl -s http://${env.HOST}:${port}/public/corridors`);
    // The demo partner exists in sandbox mode only.
    if (env.sandbox) {
      lines.push(
        `  curl -s -X POST http://${env.HOST}:${port}/quote -H "X-API-Key: ${keys.demoKeyInExample}" -H 'content-type: application/json' \\`,
        `    -d '{"amount":50000,"crypto_currency":"USDC","network":"STELLAR","payment_method":"BREB","target_currency":"COP"}'`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * SIGTERM/SIGINT: a graceful stop bounded by SHUTDOWN_GRACE_MS (src/service/service.ts), then exit
 * 0. Whatever happens the process exits: when the grace period runs out (a stop that hangs) it
 * exits 1 with a log line, and a second signal exits 1 at once (an operator who insists).
 */
function installShutdown(service: RunningService, graceMs: number): void {
  const { log } = service.ctx;
  // Part of the grace left for closing connections and flushing the log after the roles stopped.
  const closeMarginMs = Math.min(1_000, Math.floor(graceMs / 10));
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) {
      log.warn({ signal }, 'second signal while shutting down: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, graceMs }, 'shutting down');
    setTimeout(() => {
      log.error({ graceMs }, 'shutdown did not finish within SHUTDOWN_GRACE_MS: exiting with work unfinished');
      process.exit(1);
    }, graceMs);
    service.stop({ graceMs: graceMs - closeMarginMs }).then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ error: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`start-up failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
