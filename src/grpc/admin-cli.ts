// `npm run admin -- <command> …` (from the build, as in production: `node dist/grpc/admin-cli.js
// <command> …`): the ops CLI over the admin gRPC service. Reads OPS_API_KEY,
// ADMIN_ADDR (default 127.0.0.1:$GRPC_PORT or 127.0.0.1:50051) and how to reach it:
// ADMIN_TLS_CA_FILE (the CA of the admin's certificate; ADMIN_TLS_SERVER_NAME when the address is
// not a name in it) or ADMIN_TLS=off (a development service on loopback). Neither: it refuses to
// send the ops key.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createAdminClient, type AdminClient } from './admin-client.ts';
import { adminClientTls } from './link-security.ts';

const usage = `usage: npm run admin -- <command> [arguments]   (from the build: node dist/grpc/admin-cli.js <command> …)
  shards                                   shard ownership, fencing tokens, stream length, pending, lag
  workers                                  shard workers: shards owned, actors in memory, memory
  disable-user <partner> <user>            no transaction can be accepted for the user (403)
  enable-user <partner> <user>
  rotate-key <partner>                     a new API key (printed once); the old ones stop working
  reconcile <chain> <hash> [transaction]   same as POST /ops/transactions/reconcile-hash
  deliveries <partner> [state]             webhook deliveries (state: pending, delivered, failed)
  redeliver <partner> <event id>           a fresh attempt budget for a failed delivery
  destination <stage|test|activate|discard> <partner> [url]
  rotate-secret <partner>                  stage a new webhook secret (printed once)
  activate-secret <partner>                sign with the staged secret from now on
  quarantined                              actors set aside because they could not be applied
  quarantine <actor id>                    one quarantined actor: its error and dead-lettered commands
  replay <actor id>                        after the fix: apply its dead letters again, in order
  parked [topic] [--all] [--limit N]       outbox rows parked for operations, with the reason (--all: retrying ones too)
  retry-parked <topic> <row id>            make a waiting row due now: a worker tries it at its next round
  resolve-parked <topic> <row id> <note…>  mark a waiting row done by hand (its work is NOT done by the service; logged)
  set-rate <COP|BRL> <rate>                sandbox: fiat units per USD stablecoin
  sandbox-rail <BREB|PIX> [--liquidity N] [--latency MS] [--failure-rate R] [--outage on|off]
environment: OPS_API_KEY, ADMIN_ADDR (host:port), and ADMIN_TLS_CA_FILE [ADMIN_TLS_SERVER_NAME]
  or ADMIN_TLS=off (plaintext, loopback only: a development service)`;

/** Prints rows as an aligned text table. */
export function table(rows: ReadonlyArray<Record<string, unknown>>, columns: readonly string[]): string {
  const cells = rows.map((row) => columns.map((column) => String(row[column] ?? '')));
  const widths = columns.map((column, index) => Math.max(column.length, ...cells.map((cell) => cell[index]?.length ?? 0)));
  const line = (values: readonly string[]) => values.map((value, index) => value.padEnd(widths[index] ?? 0)).join('  ').trimEnd();
  return [line(columns), line(widths.map((width) => '-'.repeat(width))), ...cells.map(line)].join('\n');
}

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

export async function runCli(argv: string[], env: NodeJS.ProcessEnv, print: (text: string) => void): Promise<number> {
  const [command, ...args] = argv;
  const opsKey = env.OPS_API_KEY;
  if (command === undefined || command === 'help') {
    print(usage);
    return command === undefined ? 2 : 0;
  }
  if (!opsKey) {
    print('OPS_API_KEY must be set');
    return 2;
  }
  const address = env.ADMIN_ADDR ?? `127.0.0.1:${env.GRPC_PORT ?? '50051'}`;
  let client: AdminClient;
  try {
    client = createAdminClient(address, opsKey, { transport: adminClientTls(env) });
  } catch (error) {
    print(error instanceof Error ? error.message : String(error));
    return 2;
  }
  const need = (count: number): void => {
    if (args.length < count) throw new Error(usage);
  };
  try {
    switch (command) {
      case 'shards': {
        const reply = await client.call('ListShards');
        print(table(reply.shards as Array<Record<string, unknown>>, ['shard', 'owner', 'token', 'lease_remaining_ms', 'stream_length', 'pending', 'lag']));
        print(`workers: ${(reply.workers as string[]).join(', ') || '(none)'}`);
        return 0;
      }
      case 'workers': {
        const reply = await client.call('ListWorkers');
        const rows = (reply.workers as Array<Record<string, unknown>>).map((row) => ({
          ...row,
          rss_mib: (Number(row.rss_bytes) / 1_048_576).toFixed(1),
          heap_mib: (Number(row.heap_used_bytes) / 1_048_576).toFixed(1),
        }));
        print(table(rows, ['worker_id', 'live', 'owned_shards', 'actors_in_memory', 'rss_mib', 'heap_mib', 'reported_at_ms']));
        return 0;
      }
      case 'disable-user':
      case 'enable-user': {
        need(2);
        const reply = await client.call(command === 'disable-user' ? 'DisableUser' : 'EnableUser', { partner_id: args[0], user_id: args[1] });
        print(String(reply.message));
        return 0;
      }
      case 'rotate-key': {
        need(1);
        const reply = await client.call('RotateApiKey', { partner_id: args[0] });
        print(`new API key for ${String(reply.partner_id)} (shown once): ${String(reply.api_key)}`);
        return 0;
      }
      case 'reconcile': {
        need(2);
        const reply = await client.call('Reconcile', { blockchain: args[0], on_chain_tx: args[1], transaction_id: args[2] ?? '' });
        print(table([reply], ['blockchain', 'on_chain_tx', 'result', 'transaction_id', 'transaction_status', 'reason']));
        return 0;
      }
      case 'deliveries': {
        need(1);
        const reply = await client.call('ListDeliveries', { partner_id: args[0], state: args[1] ?? '', limit: 100 });
        print(table(reply.deliveries as Array<Record<string, unknown>>, ['event_id', 'sequence', 'event', 'state', 'attempts', 'last_status', 'last_error', 'updated_at_ms']));
        return 0;
      }
      case 'redeliver': {
        need(2);
        print(String((await client.call('Redeliver', { partner_id: args[0], event_id: args[1] })).message));
        return 0;
      }
      case 'destination': {
        need(2);
        const methods: Record<string, string> = { stage: 'StageDestination', test: 'TestDestination', activate: 'ActivateDestination', discard: 'DiscardDestination' };
        const method = methods[args[0] ?? ''];
        if (method === undefined) throw new Error(usage);
        const reply = await client.call(method, { partner_id: args[1], url: args[2] ?? '' });
        print(table([reply], ['ok', 'message', 'live_url', 'draft_url']));
        if (typeof reply.test_secret === 'string' && reply.test_secret !== '') {
          print(`test secret of the draft (shown once; its test deliveries carry it instead of the live secret): ${reply.test_secret}`);
        }
        return reply.ok === true ? 0 : 1;
      }
      case 'rotate-secret': {
        need(1);
        const reply = await client.call('RotateWebhookSecret', { partner_id: args[0] });
        print(`staged webhook secret for ${String(reply.partner_id)} (shown once): ${String(reply.secret)}`);
        return 0;
      }
      case 'activate-secret': {
        need(1);
        const reply = await client.call('ActivateWebhookSecret', { partner_id: args[0] });
        print(table([reply], ['ok', 'message', 'live_url']));
        return reply.ok === true ? 0 : 1;
      }
      case 'quarantined': {
        const reply = await client.call('ListQuarantined', { limit: 1_000 });
        print(table(reply.actors as Array<Record<string, unknown>>, ['actor_id', 'shard', 'since_ms', 'last_error_at_ms', 'error']));
        return 0;
      }
      case 'quarantine': {
        need(1);
        const reply = await client.call('InspectQuarantined', { actor_id: args[0] });
        print(table([reply], ['actor_id', 'shard', 'since_ms', 'last_error_at_ms', 'error']));
        print(table(reply.dead_letters as Array<Record<string, unknown>>, ['order', 'command_id', 'kind', 'at_ms']));
        return 0;
      }
      case 'replay': {
        need(1);
        print(String((await client.call('ReplayQuarantined', { actor_id: args[0] })).message));
        return 0;
      }
      case 'parked': {
        const topic = args[0] !== undefined && !args[0].startsWith('--') ? args[0] : '';
        const reply = await client.call('ListParked', { topic, include_retrying: args.includes('--all'), limit: Number(option(args, '--limit') ?? 0) });
        print(table(reply.rows as Array<Record<string, unknown>>, ['topic', 'id', 'state', 'attempts', 'reason', 'not_before_ms', 'partition_key', 'claimed']));
        if (reply.truncated === true) print('(more rows wait than listed: narrow by topic or raise --limit)');
        return 0;
      }
      case 'retry-parked': {
        need(2);
        print(String((await client.call('RetryParked', { topic: args[0], id: args[1] })).message));
        return 0;
      }
      case 'resolve-parked': {
        need(3);
        print(String((await client.call('ResolveParked', { topic: args[0], id: args[1], note: args.slice(2).join(' ') })).message));
        return 0;
      }
      case 'set-rate': {
        need(2);
        print(String((await client.call('SetRate', { currency: args[0], rate: args[1] })).message));
        return 0;
      }
      case 'sandbox-rail': {
        need(1);
        const reply = await client.call('SetSandboxRail', {
          method: args[0],
          liquidity: option(args, '--liquidity') ?? '',
          latency_ms: Number(option(args, '--latency') ?? -1),
          failure_rate: Number(option(args, '--failure-rate') ?? -1),
          outage: option(args, '--outage') ?? '',
        });
        print(String(reply.message));
        return 0;
      }
      default:
        print(usage);
        return 2;
    }
  } catch (error) {
    const details = (error as { details?: string }).details;
    print(`error: ${details ?? (error instanceof Error ? error.message : String(error))}`);
    return 1;
  } finally {
    client.close();
  }
}

/**
 * Whether this module is the program node was asked to run (`node dist/grpc/admin-cli.js` in
 * production, `src/grpc/admin-cli.ts` through tsx in development), not a module a test imported
 * for `runCli`. Compared by real path, so a symlinked install or the compiled name both count.
 */
function isProgram(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isProgram()) {
  runCli(process.argv.slice(2), process.env, (text) => process.stdout.write(`${text}\n`)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${String(error)}\n`);
      process.exit(1);
    },
  );
}
