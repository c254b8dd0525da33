// Composition root: `node src/main.ts [role]` (or ROLE=…). `all` — every role in one process,
// embedded bus and store, sandbox chains and rails — is the default and needs no configuration.
import { readEnv } from './config/env.ts';
import { startService } from './service/service.ts';

async function main(): Promise<void> {
  const env = readEnv(process.env, process.argv.slice(2));
  const service = await startService(env);
  const { ctx, port } = service;
  const lines = [`role ${env.ROLE}; bus ${env.REDIS_URL ? 'redis' : 'in-process'}; store ${env.MONGODB_URL ? 'mongodb' : `embedded (${env.DATA_DIR})`}; sandbox ${env.sandbox ? 'on' : 'off'}`];
  if (port !== null) lines.push(`edge listening on http://${env.HOST}:${port}`);
  if (service.adminPort !== null) lines.push(`admin gRPC on ${env.HOST}:${service.adminPort} (npm run admin -- help)`);
  // Printed once to the terminal of whoever started the service; never written to the logs.
  if (ctx.generatedKeys.demoApiKey) lines.push(`demo partner API key: ${ctx.generatedKeys.demoApiKey}`);
  if (ctx.generatedKeys.opsApiKey) lines.push(`ops API key: ${ctx.generatedKeys.opsApiKey}`);
  if (port !== null) {
    const key = ctx.generatedKeys.demoApiKey ?? '$DEMO_API_KEY';
    lines.push(
      'try:',
      `  curl -s http://${env.HOST}:${port}/public/corridors`,
      `  curl -s -X POST http://${env.HOST}:${port}/quote -H 'X-API-Key: ${key}' -H 'content-type: application/json' \\`,
      `    -d '{"amount":50000,"crypto_currency":"USDC","network":"STELLAR","payment_method":"BREB","target_currency":"COP"}'`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    ctx.log.info({ signal }, 'shutting down');
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        ctx.log.error({ error: String(error) }, 'shutdown failed');
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
