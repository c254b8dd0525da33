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

/** What the CLI reads from its environment: printed by help and when something is missing. */
const environmentHelp = `environment:
  OPS_API_KEY            the ops key of the service (required; the service printed or wrote it at start
                         when it generated one: DATA_DIR/generated-keys-<role>.env)
  ADMIN_ADDR             host:port of the admin service (default 127.0.0.1:$GRPC_PORT, GRPC_PORT default 50051)
  ADMIN_TLS_CA_FILE      the CA of the admin service's certificate (a production service speaks TLS)
  ADMIN_TLS_SERVER_NAME  the name to check in that certificate, when ADMIN_ADDR is not one of its names
  ADMIN_TLS=off          plaintext instead, to a loopback address only (\`npm start\` on this machine)
  without ADMIN_TLS_CA_FILE or ADMIN_TLS=off the CLI refuses to send the ops key.`;

const usage = `usage: npm run admin -- <command> [arguments] [--json]   (from the build: node dist/grpc/admin-cli.js <command> …)
  shards                                   shard ownership, fencing tokens, stream length, pending, lag
  workers                                  shard workers: shards owned, actors in memory, memory
  disable-user <partner> <user>            no transaction can be accepted for the user (403)
  enable-user <partner> <user>
  rotate-key <partner>                     a new API key (printed once); the old ones stop working
  reconcile <chain> <hash> [transaction]   same as POST /ops/transactions/reconcile-hash
  deliveries <partner> [state]             webhook deliveries (state: pending, delivered, failed)
  redeliver <partner> <event id>           a fresh attempt budget for a failed delivery
  redeliver <partner> --from <time> [--to <time>] [--limit N]
                                           the same for every failed delivery of the partner whose
                                           event was created in [from, to); time: ISO 8601 or ms
  destination get <partner>                the live URL and where it comes from, the draft, the secrets
  destination <stage|test|activate|discard> <partner> [url]
  rotate-secret <partner>                  stage a new webhook secret (printed once)
  activate-secret <partner>                sign with the staged secret from now on
  quarantined                              actors set aside because they could not be applied
  quarantine <actor id>                    one quarantined actor: its error and dead-lettered commands
  replay <actor id>                        after the fix: apply its dead letters again, in order
  parked [topic] [--all] [--limit N]       outbox rows parked for operations, with the reason (--all: retrying ones too)
  retry-parked <topic> <row id>            make a waiting row due now: a worker tries it at its next round
  resolve-parked <topic> <row id> <note…>  mark a waiting row done by hand (its work is NOT done by the service; logged)
  unmatched list [--partner ID|-] [--state S] [--network N] [--limit N]
                                           unmatched deposits, newest first (state: open, refunding,
                                           refunded, applied; --partner -: those no partner can be named for)
  set-rate <COP|BRL> <rate>                sandbox: fiat units per USD stablecoin
  sandbox-rail <BREB|PIX> [--liquidity N] [--latency MS] [--failure-rate R] [--outage on|off]
  help                                     this text
--json: print the service's reply as JSON instead of a table (for scripts); the exit code is the same.
${environmentHelp}`;

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

/** A time given on the command line: ISO 8601 (`2026-11-25T14:00:00Z`) or milliseconds since the epoch. */
export function parseTimeMs(text: string): number | null {
  if (/^\d+$/.test(text)) return Number.isSafeInteger(Number(text)) ? Number(text) : null;
  const parsed = Date.parse(text);
  return Number.isNaN(parsed) ? null : parsed;
}

/** The reply of a call and how to show it; `--json` prints the reply itself instead of `text`. */
interface Shown {
  readonly reply: Record<string, unknown>;
  readonly text: () => string;
  /** Exit code: 1 when the service answered "not done" (ok: false). */
  readonly code?: number;
}

function shown(reply: Record<string, unknown>, text: () => string): Shown {
  return { reply, text, code: reply.ok === false ? 1 : 0 };
}

/** A command's own arguments were wrong: the usage is printed, exit code 2. */
class UsageError extends Error {}

function time(args: readonly string[], name: string): number {
  const text = option([...args], name);
  if (text === undefined) return 0;
  const ms = parseTimeMs(text);
  if (ms === null) throw new UsageError(`${name}: not a time (ISO 8601 such as 2026-11-25T14:00:00Z, or ms since the epoch): ${text}`);
  return ms;
}

function redeliverCall(client: AdminClient, args: readonly string[]): Promise<Shown> {
  if (!args.includes('--from')) {
    return client.call('Redeliver', { partner_id: args[0], event_id: args[1] }).then((reply) => shown(reply, () => String(reply.message)));
  }
  const request = { partner_id: args[0], from_ms: String(time(args, '--from')), to_ms: String(time(args, '--to')), limit: Number(option([...args], '--limit') ?? 0) };
  return client.call('RedeliverFailed', request).then((reply) => {
    const ids = reply.event_ids as string[];
    return shown(reply, () =>
      [
        `redelivered ${ids.length} failed deliver${ids.length === 1 ? 'y' : 'ies'} of ${String(args[0])}${ids.length > 0 ? ':' : ''}`,
        ...ids.map((id) => `  ${id}`),
        ...(Number(reply.refused) > 0 ? [`${String(reply.refused)} no longer failed when redelivered (another redelivery started them)`] : []),
        ...(reply.truncated === true ? ['(more failed deliveries may remain in the range: run it again)'] : []),
      ].join('\n'),
    );
  });
}

function destinationCall(client: AdminClient, args: readonly string[]): Promise<Shown> {
  const methods: Record<string, string> = { get: 'GetDestination', stage: 'StageDestination', test: 'TestDestination', activate: 'ActivateDestination', discard: 'DiscardDestination' };
  const method = methods[args[0] ?? ''];
  if (method === undefined) throw new UsageError(`destination: no subcommand ${args[0] ?? ''}`);
  return client.call(method, { partner_id: args[1], url: args[2] ?? '' }).then((reply) =>
    shown(reply, () => {
      if (method === 'GetDestination') return table([reply], ['ok', 'message', 'live_url', 'source', 'secret_configured', 'secret_staged', 'draft_url', 'draft_test', 'draft_test_excerpt']);
      const lines = [table([reply], ['ok', 'message', 'live_url', 'draft_url'])];
      if (typeof reply.test_secret === 'string' && reply.test_secret !== '') {
        lines.push(`test secret of the draft (shown once; its test deliveries carry it instead of the live secret): ${reply.test_secret}`);
      }
      return lines.join('\n');
    }),
  );
}

/**
 * One command's call and how its reply is shown. Long because it is the command table: one short
 * `case` per command (the ones `usage` lists, in the same order), each a call and its printing;
 * an operator reading what `npm run admin -- x` does finds it in one place.
 */
async function dispatch(client: AdminClient, command: string, args: string[]): Promise<Shown> {
  const need = (count: number): void => {
    if (args.length < count) throw new UsageError(`${command} needs ${count} argument${count === 1 ? '' : 's'}`);
  };
  const message = (reply: Record<string, unknown>) => shown(reply, () => String(reply.message));
  switch (command) {
    case 'shards': {
      const reply = await client.call('ListShards');
      return shown(reply, () =>
        [
          table(reply.shards as Array<Record<string, unknown>>, ['shard', 'owner', 'token', 'lease_remaining_ms', 'stream_length', 'pending', 'lag']),
          `workers: ${(reply.workers as string[]).join(', ') || '(none)'}`,
        ].join('\n'),
      );
    }
    case 'workers': {
      const reply = await client.call('ListWorkers');
      const rows = (reply.workers as Array<Record<string, unknown>>).map((row) => ({
        ...row,
        rss_mib: (Number(row.rss_bytes) / 1_048_576).toFixed(1),
        heap_mib: (Number(row.heap_used_bytes) / 1_048_576).toFixed(1),
      }));
      return shown(reply, () => table(rows, ['worker_id', 'live', 'owned_shards', 'actors_in_memory', 'rss_mib', 'heap_mib', 'reported_at_ms']));
    }
    case 'disable-user':
    case 'enable-user':
      need(2);
      return message(await client.call(command === 'disable-user' ? 'DisableUser' : 'EnableUser', { partner_id: args[0], user_id: args[1] }));
    case 'rotate-key': {
      need(1);
      const reply = await client.call('RotateApiKey', { partner_id: args[0] });
      return shown(reply, () => `new API key for ${String(reply.partner_id)} (shown once): ${String(reply.api_key)}`);
    }
    case 'reconcile': {
      need(2);
      const reply = await client.call('Reconcile', { blockchain: args[0], on_chain_tx: args[1], transaction_id: args[2] ?? '' });
      return shown(reply, () => table([reply], ['blockchain', 'on_chain_tx', 'result', 'transaction_id', 'transaction_status', 'reason']));
    }
    case 'deliveries': {
      need(1);
      const reply = await client.call('ListDeliveries', { partner_id: args[0], state: args[1] ?? '', limit: 100 });
      return shown(reply, () => table(reply.deliveries as Array<Record<string, unknown>>, ['event_id', 'sequence', 'event', 'state', 'attempts', 'last_status', 'last_error', 'updated_at_ms']));
    }
    case 'redeliver':
      need(2);
      return redeliverCall(client, args);
    case 'destination':
      need(2);
      return destinationCall(client, args);
    case 'rotate-secret': {
      need(1);
      const reply = await client.call('RotateWebhookSecret', { partner_id: args[0] });
      return shown(reply, () => `staged webhook secret for ${String(reply.partner_id)} (shown once): ${String(reply.secret)}`);
    }
    case 'activate-secret': {
      need(1);
      const reply = await client.call('ActivateWebhookSecret', { partner_id: args[0] });
      return shown(reply, () => table([reply], ['ok', 'message', 'live_url']));
    }
    case 'quarantined': {
      const reply = await client.call('ListQuarantined', { limit: 1_000 });
      return shown(reply, () => table(reply.actors as Array<Record<string, unknown>>, ['actor_id', 'shard', 'since_ms', 'last_error_at_ms', 'error']));
    }
    case 'quarantine': {
      need(1);
      const reply = await client.call('InspectQuarantined', { actor_id: args[0] });
      return shown(reply, () =>
        [table([reply], ['actor_id', 'shard', 'since_ms', 'last_error_at_ms', 'error']), table(reply.dead_letters as Array<Record<string, unknown>>, ['order', 'command_id', 'kind', 'at_ms'])].join('\n'),
      );
    }
    case 'replay':
      need(1);
      return message(await client.call('ReplayQuarantined', { actor_id: args[0] }));
    case 'parked': {
      const topic = args[0] !== undefined && !args[0].startsWith('--') ? args[0] : '';
      const reply = await client.call('ListParked', { topic, include_retrying: args.includes('--all'), limit: Number(option(args, '--limit') ?? 0) });
      return shown(reply, () =>
        [
          table(reply.rows as Array<Record<string, unknown>>, ['topic', 'id', 'state', 'attempts', 'reason', 'not_before_ms', 'partition_key', 'claimed']),
          ...(reply.truncated === true ? ['(more rows wait than listed: narrow by topic or raise --limit)'] : []),
        ].join('\n'),
      );
    }
    case 'retry-parked':
      need(2);
      return message(await client.call('RetryParked', { topic: args[0], id: args[1] }));
    case 'resolve-parked':
      need(3);
      return message(await client.call('ResolveParked', { topic: args[0], id: args[1], note: args.slice(2).join(' ') }));
    case 'unmatched': {
      if (args[0] !== 'list') throw new UsageError('unmatched takes a subcommand: list');
      const reply = await client.call('ListUnmatched', {
        partner_id: option(args, '--partner') ?? '',
        state: option(args, '--state') ?? '',
        network: option(args, '--network') ?? '',
        limit: Number(option(args, '--limit') ?? 0),
      });
      const rows = reply.rows as Array<Record<string, unknown>>;
      return shown(reply, () =>
        [
          table(rows, ['id', 'partner_id', 'state', 'network', 'asset', 'amount', 'reason', 'transaction_id', 'applied_to', 'refund_hash', 'created_at_ms', 'hold_ends_at_ms']),
          ...(Number(reply.total) > rows.length ? [`(${String(reply.total)} match; ${rows.length} listed: narrow the filters or raise --limit)`] : []),
        ].join('\n'),
      );
    }
    case 'set-rate':
      need(2);
      return message(await client.call('SetRate', { currency: args[0], rate: args[1] }));
    case 'sandbox-rail':
      need(1);
      return message(
        await client.call('SetSandboxRail', {
          method: args[0],
          liquidity: option(args, '--liquidity') ?? '',
          latency_ms: Number(option(args, '--latency') ?? -1),
          failure_rate: Number(option(args, '--failure-rate') ?? -1),
          outage: option(args, '--outage') ?? '',
        }),
      );
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

/** What the CLI does for `argv`: prints through `print` and resolves to the exit code (0 done, 1 refused or failed, 2 usage). */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, print: (text: string) => void): Promise<number> {
  const json = argv.includes('--json');
  const [command, ...args] = argv.filter((arg) => arg !== '--json');
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    print(usage);
    return command === undefined ? 2 : 0;
  }
  const opsKey = env.OPS_API_KEY;
  if (!opsKey) {
    print(`OPS_API_KEY must be set\n${environmentHelp}`);
    return 2;
  }
  const address = env.ADMIN_ADDR ?? `127.0.0.1:${env.GRPC_PORT ?? '50051'}`;
  let client: AdminClient;
  try {
    client = createAdminClient(address, opsKey, { transport: adminClientTls(env) });
  } catch (error) {
    print(`${error instanceof Error ? error.message : String(error)}\n${environmentHelp}`);
    return 2;
  }
  try {
    const result = await dispatch(client, command, args);
    print(json ? JSON.stringify(result.reply, null, 2) : result.text());
    return result.code ?? 0;
  } catch (error) {
    if (error instanceof UsageError) {
      print(`${error.message}\n${usage}`);
      return 2;
    }
    const details = (error as { details?: string }).details;
    const code = (error as { code?: unknown }).code;
    const text = details ?? (error instanceof Error ? error.message : String(error));
    print(json ? JSON.stringify({ error: text, grpc_code: typeof code === 'number' ? code : null }) : `error: ${text}`);
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
