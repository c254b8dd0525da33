// A stand-in composition root for the EDGE process, used by the bench only when the real one
// (src/main.ts) cannot accept transactions yet: it answers POST /transaction with 503 because it
// does not wire the deposit-instructions capability (`EdgeDeps.paymentContexts`). This entry
// builds the same context and calls the same `startEdgeRole`, adding only the payment-context
// stand-in the end-to-end tests use (test/support/service-harness.ts). Shard processes always run
// the real src/main.ts. Every result records which entry served it.
//
// Env: as src/main.ts; ROLE is `edge`, or `all` (then the shard role runs in this process too,
// started by the composition root's own `startService`, exactly as the end-to-end harness does).
import { readEnv } from '../../src/config/env.ts';
import { createContext } from '../../src/service/context.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import { startEdgeRole } from '../../src/service/edge-role.ts';
import { startService } from '../../src/service/service.ts';
import { testPaymentContexts } from '../../test/support/service-harness.ts';

async function main(): Promise<void> {
  const env = readEnv(process.env);
  if (env.ROLE !== 'edge' && env.ROLE !== 'all') throw new Error(`bench service entry runs ROLE=edge or ROLE=all (got ${env.ROLE})`);
  let ctx: ServiceContext;
  let stopRest: () => Promise<void>;
  if (env.ROLE === 'all') {
    const shard = await startService({ ...env, ROLE: 'shard' });
    ctx = shard.ctx;
    stopRest = () => shard.stop();
  } else {
    const created = await createContext(env);
    ctx = created;
    stopRest = () => created.close();
  }
  const edge = await startEdgeRole(ctx, { paymentContexts: testPaymentContexts(ctx) });
  process.stdout.write(`bench edge listening on http://${env.HOST}:${edge.port}\n`);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    edge
      .stop()
      .then(stopRest)
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench edge start-up failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
