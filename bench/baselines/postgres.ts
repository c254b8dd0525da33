// The PostgreSQL baseline's set-up and checks, run by the bench process: is a server reachable,
// a fresh schema (quotes, method-day and user-day cap rows, transactions) per measured point, the
// server process (postgres-server.ts), and the cap check after the load.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { civilDayKey, type LimitsConfig } from '../../src/domain/limits.ts';
import { toPlainString } from '../../src/domain/money.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { freePort, http, startNode, waitFor, type NodeProcess } from '../lib/processes.ts';
import type { BenchPartner } from '../lib/service.ts';

export const postgresUrlDefault = 'postgresql://postgres@127.0.0.1:5432/test';
export const postgresSchema = 'bench_hotcap';
const serverEntry = fileURLToPath(new URL('./postgres-server.ts', import.meta.url));

/** null when reachable; otherwise why not (the baseline is then skipped with this message). */
export async function postgresUnavailable(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return `PostgreSQL at ${url.replace(/\/\/[^@]*@/, '//…@')} is not reachable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface PostgresSettings {
  readonly version: string;
  readonly synchronousCommit: string;
  readonly fsync: string;
}

export async function postgresSettings(url: string): Promise<PostgresSettings> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const show = async (name: string): Promise<string> => {
      const result = await client.query<Record<string, string>>(`SHOW ${name}`);
      return Object.values(result.rows[0] ?? {})[0] ?? 'unknown';
    };
    return { version: await show('server_version'), synchronousCommit: await show('synchronous_commit'), fsync: await show('fsync') };
  } finally {
    await client.end();
  }
}

export interface PostgresQuotes {
  /** Quote id per partner id, per method. */
  readonly breb: ReadonlyMap<string, string>;
  readonly pix: ReadonlyMap<string, string>;
  /** The first partner's BREB quote for the pre-fill amount. */
  readonly prefill: string;
}

/**
 * Drops and recreates the bench schema, the method's day row with its cap, and one BREB and one
 * PIX quote per partner (the same amounts the service workload uses).
 */
export async function resetPostgres(
  url: string,
  partners: readonly BenchPartner[],
  amounts: { readonly breb: string; readonly pix: string; readonly prefill: string },
  nowMs: number,
  limits: LimitsConfig = defaultLimitsConfig,
): Promise<PostgresQuotes> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const caps = limits.methods.BREB;
    if (caps.methodDailyAmountMax === null) throw new Error('the postgres baseline needs a BREB method cap');
    await client.query(`DROP SCHEMA IF EXISTS ${postgresSchema} CASCADE`);
    await client.query(`CREATE SCHEMA ${postgresSchema}`);
    await client.query(`SET search_path = ${postgresSchema}`);
    await client.query(`CREATE TABLE quotes (id uuid PRIMARY KEY, partner_id text NOT NULL, method text NOT NULL,
      target_amount numeric(20,2) NOT NULL, expires_at_ms bigint NOT NULL)`);
    await client.query(`CREATE TABLE method_day (method text NOT NULL, day text NOT NULL, cap numeric(20,2) NOT NULL,
      reserved_amount numeric(20,2) NOT NULL DEFAULT 0, PRIMARY KEY (method, day))`);
    await client.query(`CREATE TABLE user_day (partner_id text NOT NULL, user_id text NOT NULL, method text NOT NULL, day text NOT NULL,
      reserved_amount numeric(20,2) NOT NULL DEFAULT 0, reserved_count integer NOT NULL DEFAULT 0,
      PRIMARY KEY (partner_id, user_id, method, day))`);
    await client.query(`CREATE TABLE transactions (id uuid PRIMARY KEY, partner_id text NOT NULL, user_id text NOT NULL, quote_id uuid NOT NULL,
      method text NOT NULL, amount numeric(20,2) NOT NULL, account_number text NOT NULL, status text NOT NULL, created_at_ms bigint NOT NULL)`);
    // The day the server will compute, and the next one (a run that crosses midnight stays correct).
    for (const dayMs of [nowMs, nowMs + 86_400_000]) {
      await client.query('INSERT INTO method_day (method, day, cap) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        'BREB',
        civilDayKey(dayMs, caps.dayUtcOffsetMinutes),
        toPlainString(caps.methodDailyAmountMax),
      ]);
    }
    const breb = new Map<string, string>();
    const pix = new Map<string, string>();
    const expiresAtMs = nowMs + 3_600_000;
    for (const partner of partners) {
      const brebId = randomUUID();
      const pixId = randomUUID();
      breb.set(partner.id, brebId);
      pix.set(partner.id, pixId);
      await client.query('INSERT INTO quotes VALUES ($1, $2, $3, $4, $5), ($6, $2, $7, $8, $5)', [
        brebId,
        partner.id,
        'BREB',
        amounts.breb,
        expiresAtMs,
        pixId,
        'PIX',
        amounts.pix,
      ]);
    }
    const first = partners[0];
    if (first === undefined) throw new Error('the postgres baseline needs a partner');
    const prefill = randomUUID();
    await client.query('INSERT INTO quotes VALUES ($1, $2, $3, $4, $5)', [prefill, first.id, 'BREB', amounts.prefill, expiresAtMs]);
    return { breb, pix, prefill };
  } finally {
    await client.end();
  }
}

export interface PostgresServer {
  readonly baseUrl: string;
  readonly process: NodeProcess;
  retries(): Promise<number>;
  stop(): Promise<void>;
}

export type PostgresIsolation = 'serializable' | 'read committed';

export async function startPostgresServer(
  url: string,
  partners: readonly BenchPartner[],
  dataDir: string,
  poolSize: number,
  isolation: PostgresIsolation,
  limitsFile?: string,
): Promise<PostgresServer> {
  const partnersFile = join(dataDir, 'pg-partners.json');
  writeFileSync(partnersFile, JSON.stringify(partners.map((partner) => ({ id: partner.id, apiKeySha256: sha256Hex(partner.apiKey) }))));
  const port = await freePort();
  const proc = startNode(`postgres-baseline (${isolation})`, serverEntry, {
    PORT: String(port),
    BENCH_PG_ISOLATION: isolation,
    BENCH_PG_URL: url,
    BENCH_PG_SCHEMA: postgresSchema,
    BENCH_PG_POOL: String(poolSize),
    BENCH_PARTNERS_FILE: partnersFile,
    ...(limitsFile === undefined ? {} : { LIMITS_FILE: limitsFile }),
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitFor('the postgres baseline to listen', async () => (await http(`${baseUrl}/stats`, { timeoutMs: 1_000 })).status === 200, 60_000, [proc]);
  } catch (error) {
    await proc.stop();
    throw error;
  }
  return {
    baseUrl,
    process: proc,
    retries: async () => (JSON.parse((await http(`${baseUrl}/stats`)).body) as { retries: number }).retries,
    stop: () => proc.stop(),
  };
}

export interface PostgresCapTally {
  readonly accepted: number;
  readonly acceptedAmount: string;
  readonly methodReserved: string;
  readonly methodCap: string;
  readonly violations: string[];
  readonly usersChecked: number;
}

/** Reads back what the baseline accepted and checks every cap against it. */
export async function checkPostgresCaps(url: string, limits: LimitsConfig = defaultLimitsConfig): Promise<PostgresCapTally> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET search_path = ${postgresSchema}`);
    const caps = limits.methods.BREB;
    const violations: string[] = [];
    const totals = await client.query<{ accepted: string; amount: string | null }>(
      `SELECT count(*)::text AS accepted, sum(amount)::text AS amount FROM transactions WHERE method = 'BREB'`,
    );
    const methodRows = await client.query<{ day: string; cap: string; reserved_amount: string; over: boolean }>(
      `SELECT day, cap::text, reserved_amount::text, reserved_amount > cap AS over FROM method_day WHERE method = 'BREB'`,
    );
    let methodReserved = '0';
    let methodCap = caps.methodDailyAmountMax === null ? 'none' : toPlainString(caps.methodDailyAmountMax);
    for (const row of methodRows.rows) {
      if (row.over) violations.push(`method-day ${row.day}: reserved ${row.reserved_amount} > cap ${row.cap}`);
      if (row.reserved_amount !== '0.00') {
        methodReserved = row.reserved_amount;
        methodCap = row.cap;
      }
    }
    const users = await client.query<{ partner_id: string; user_id: string; count: number; amount: string }>(
      `SELECT partner_id, user_id, count(*)::int AS count, sum(amount)::text AS amount FROM transactions WHERE method = 'BREB' GROUP BY partner_id, user_id`,
    );
    for (const row of users.rows) {
      if (caps.userDailyCountMax !== null && row.count > caps.userDailyCountMax) {
        violations.push(`user ${row.partner_id}/${row.user_id}: ${row.count} transactions > ${caps.userDailyCountMax}`);
      }
    }
    const overUsers = await client.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM (SELECT sum(amount) AS s FROM transactions WHERE method = 'BREB' GROUP BY partner_id, user_id) x WHERE x.s > $1::numeric`,
      [caps.userDailyAmountMax === null ? '1e30' : toPlainString(caps.userDailyAmountMax)],
    );
    if (overUsers.rows[0]?.n !== '0') violations.push(`${overUsers.rows[0]?.n ?? '?'} users above the daily amount cap`);
    const overTotal = await client.query<{ over: boolean }>(`SELECT coalesce(sum(amount), 0) > $1::numeric AS over FROM transactions WHERE method = 'BREB'`, [
      methodCap === 'none' ? '1e30' : methodCap,
    ]);
    if (overTotal.rows[0]?.over === true) violations.push(`accepted total ${totals.rows[0]?.amount ?? '?'} > method cap ${methodCap}`);
    const sumReserved = await client.query<{ same: boolean }>(
      `SELECT (SELECT coalesce(sum(reserved_amount), 0) FROM method_day WHERE method = 'BREB') = (SELECT coalesce(sum(amount), 0) FROM transactions WHERE method = 'BREB') AS same`,
    );
    if (sumReserved.rows[0]?.same !== true) violations.push('method-day counters disagree with the accepted transactions');
    return {
      accepted: Number(totals.rows[0]?.accepted ?? '0'),
      acceptedAmount: totals.rows[0]?.amount ?? '0',
      methodReserved,
      methodCap,
      violations,
      usersChecked: users.rows.length,
    };
  } finally {
    await client.end();
  }
}
