// Baseline 3, the conventional design for acceptance: POST /transaction behind a uWebSockets.js
// handler, one PostgreSQL transaction per request (SERIALIZABLE by default; READ COMMITTED as a
// second variant, see bench/README.md) that locks the user's
// day row and the payment method's day row (SELECT … FOR UPDATE, always in that order), checks the
// same caps as our service (per-user count and amount, per-method amount), updates both rows and
// inserts the transaction. Serialization failures and deadlocks are retried (bounded). Statements
// are sent one by one from the application, as such code usually is.
// Env: PORT, BENCH_PG_URL, BENCH_PG_SCHEMA, BENCH_PG_POOL, BENCH_PG_ISOLATION (`serializable` or
// `read committed`), BENCH_PARTNERS_FILE (JSON
// [{ id, apiKeySha256 }]). Prints `listening <port>` when bound.
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import uWS from 'uWebSockets.js';
import { defaultLimitsConfig, loadLimitsFile } from '../../src/config/limits.ts';
import { civilDayKey } from '../../src/domain/limits.ts';
import { compare, decimalFromString, toPlainString } from '../../src/domain/money.ts';

const bodyBytesMax = 64 * 1024;
const attemptsMax = 20;
const retryDelayMsMax = 20;
const retryableCodes = new Set(['40001', '40P01']);
const isolation = process.env['BENCH_PG_ISOLATION'] === 'read committed' ? 'READ COMMITTED' : 'SERIALIZABLE';

const port = Number(process.env['PORT'] ?? '0');
const schema = process.env['BENCH_PG_SCHEMA'] ?? 'bench_hotcap';
const pool = new pg.Pool({
  connectionString: process.env['BENCH_PG_URL'] ?? 'postgresql://postgres@127.0.0.1:5432/test',
  max: Number(process.env['BENCH_PG_POOL'] ?? '16'),
  options: `-c search_path=${schema}`,
});
const partnersByKeyHash = new Map<string, string>(
  (JSON.parse(readFileSync(process.env['BENCH_PARTNERS_FILE'] ?? '', 'utf8')) as { id: string; apiKeySha256: string }[]).map((partner) => [
    partner.apiKeySha256,
    partner.id,
  ]),
);

// The same limits file as the service it is compared with (hot-accept raises the caps).
const limitsFile = process.env['LIMITS_FILE'];
const caps = (limitsFile === undefined || limitsFile === '' ? defaultLimitsConfig : loadLimitsFile(limitsFile)).methods.BREB;
const capText = (value: { units: bigint; scale: number } | null): string | null => (value === null ? null : toPlainString(value));
const userDailyAmountMax = capText(caps.userDailyAmountMax);
const userDailyCountMax = caps.userDailyCountMax;

interface Reply {
  readonly status: string;
  readonly body: string;
}

const reject = (code: string, reason: string, status = '400 Bad Request'): Reply => ({
  status,
  body: JSON.stringify({ code, reason, retryable: false }),
});

class Refusal extends Error {
  constructor(readonly reply: Reply) {
    super(reply.body);
  }
}

async function acceptOnce(client: pg.PoolClient, partnerId: string, quoteId: string, userId: string, accountNumber: string, nowMs: number): Promise<Reply> {
  await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
  try {
    const quote = await client.query<{ partner_id: string; method: string; target_amount: string; expires_at_ms: string }>(
      'SELECT partner_id, method, target_amount, expires_at_ms FROM quotes WHERE id = $1',
      [quoteId],
    );
    const row = quote.rows[0];
    if (row === undefined || row.partner_id !== partnerId) throw new Refusal(reject('quote_not_found', 'Quote not found', '404 Not Found'));
    if (Number(row.expires_at_ms) <= nowMs) throw new Refusal(reject('quote_expired', 'The quote expired'));
    const transactionId = randomUUID();
    if (row.method === 'BREB') {
      const day = civilDayKey(nowMs, caps.dayUtcOffsetMinutes);
      const amount = row.target_amount;
      if (caps.transactionAmountMax !== null && compare(decimalFromString(amount, 2), caps.transactionAmountMax) > 0) {
        throw new Refusal(reject('transaction_cap', 'Above the per-transaction cap'));
      }
      await client.query(
        'INSERT INTO user_day (partner_id, user_id, method, day) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
        [partnerId, userId, row.method, day],
      );
      const user = await client.query<{ reserved_amount: string; reserved_count: number; over_amount: boolean }>(
        'SELECT reserved_amount, reserved_count, reserved_amount + $5::numeric > $6::numeric AS over_amount FROM user_day WHERE partner_id = $1 AND user_id = $2 AND method = $3 AND day = $4 FOR UPDATE',
        [partnerId, userId, row.method, day, amount, userDailyAmountMax],
      );
      const method = await client.query<{ over_cap: boolean }>(
        'SELECT reserved_amount + $3::numeric > cap AS over_cap FROM method_day WHERE method = $1 AND day = $2 FOR UPDATE',
        [row.method, day, amount],
      );
      const userRow = user.rows[0];
      const methodRow = method.rows[0];
      if (userRow === undefined || methodRow === undefined) throw new Error('cap rows missing');
      if (userDailyCountMax !== null && userRow.reserved_count + 1 > userDailyCountMax) {
        throw new Refusal(reject('user_daily_count_cap', 'The maximum number of transactions for today was reached'));
      }
      if (userRow.over_amount) throw new Refusal(reject('user_daily_amount_cap', 'The user reached today\'s limit'));
      if (methodRow.over_cap) throw new Refusal(reject('method_daily_cap', 'The method reached today\'s payout limit'));
      await client.query(
        'UPDATE user_day SET reserved_amount = reserved_amount + $5::numeric, reserved_count = reserved_count + 1 WHERE partner_id = $1 AND user_id = $2 AND method = $3 AND day = $4',
        [partnerId, userId, row.method, day, amount],
      );
      await client.query('UPDATE method_day SET reserved_amount = reserved_amount + $3::numeric WHERE method = $1 AND day = $2', [row.method, day, amount]);
    }
    await client.query(
      'INSERT INTO transactions (id, partner_id, user_id, quote_id, method, amount, account_number, status, created_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [transactionId, partnerId, userId, quoteId, row.method, row.target_amount, accountNumber, 'AWAITING_PAYMENT', nowMs],
    );
    await client.query('COMMIT');
    return { status: '200 OK', body: JSON.stringify({ id: transactionId, kycRequired: false, transaction_reference: null, payment_context: null }) };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (error instanceof Refusal) return error.reply;
    throw error;
  }
}

async function accept(partnerId: string, body: Buffer): Promise<Reply> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return reject('invalid_request', 'Body is not JSON');
  }
  const fields = (parsed ?? {}) as Record<string, unknown>;
  const { quote_id: quoteId, user_id: userId, account_number: accountNumber } = fields;
  if (typeof quoteId !== 'string' || typeof userId !== 'string' || typeof accountNumber !== 'string') {
    return reject('invalid_request', 'quote_id, user_id and account_number are required');
  }
  const client = await pool.connect();
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await acceptOnce(client, partnerId, quoteId, userId, accountNumber, Date.now());
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'string' && retryableCodes.has(code) && attempt < attemptsMax) {
          retries += 1;
          // Jittered, growing pause: immediate retries of a hot row only collide again.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(retryDelayMsMax, 2 ** attempt)));
          continue;
        }
        throw error;
      }
    }
  } finally {
    client.release();
  }
}

let retries = 0;

const app = uWS.App();
app.post('/transaction', (res, req) => {
  const keyHash = createHash('sha256').update(req.getHeader('x-api-key')).digest('hex');
  const partnerId = partnersByKeyHash.get(keyHash);
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  const send = (reply: Reply): void => {
    if (aborted) return;
    res.cork(() => res.writeStatus(reply.status).writeHeader('content-type', 'application/json').end(reply.body));
  };
  if (partnerId === undefined) {
    send(reject('authentication_failed', 'Missing or invalid API key', '401 Unauthorized'));
    return;
  }
  const chunks: Buffer[] = [];
  let received = 0;
  res.onData((chunk, isLast) => {
    received += chunk.byteLength;
    if (received > bodyBytesMax) {
      if (!aborted) send(reject('payload_too_large', 'Body too large', '413 Payload Too Large'));
      aborted = true;
      return;
    }
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!isLast) return;
    accept(partnerId, Buffer.concat(chunks)).then(send, (error: unknown) => {
      process.stderr.write(`postgres baseline: ${String(error)}\n`);
      send({ status: '500 Internal Server Error', body: '{"code":"server_error"}' });
    });
  });
});
app.get('/stats', (res) => {
  res.writeHeader('content-type', 'application/json').end(JSON.stringify({ retries }));
});
app.listen('127.0.0.1', port, (token) => {
  if (token === false) {
    process.stderr.write(`postgres baseline could not listen on ${port}\n`);
    process.exit(1);
  }
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => {
  pool.end().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
