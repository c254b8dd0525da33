// The abuse-resistance audit's slow-upload attack, against the whole service as `npm start` wires
// it, in a child process (test/support/edge-child.ts) so the edge's memory is measured alone: one
// partner opens 26 KYC uploads of about 10 MiB each and stalls them before their last byte. The
// sizes fill what used to be the edge's one process-wide body budget (256 MiB) to the byte, the
// worst case of the attack. What a partner and an operator must see:
//   - another partner's POST /quote and a small POST /kyc succeed during the attack, and so do the
//     attacker's own JSON calls (uploads have their own budget);
//   - every stalled upload gets an answer (429 beyond the partner's upload share, 408 once it stops
//     arriving), never a silent close, and leaves no part of its document in the store;
//   - the edge's memory stays near its baseline during the attack (uploads are streamed to the
//     store, not held) and comes back to it afterwards (after a GC).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { kycUploadBodyBytesMax } from '../../src/edge/multipart.ts';
import { eventually } from '../support/eventually.ts';
import { startEdgeChild, type EdgeChild, type MemorySample } from '../support/edge-child.ts';
import { testPartners } from '../support/service-harness.ts';
import { call, kycForm, payoutQuoteBody, pngBytes } from './support.ts';

const attackUploads = 26;
/** The old process-wide body budget, filled exactly by the attack (16 bytes short). */
const oldBodyBudgetBytes = 256 * 1024 * 1024;
const bodyBytesPerUpload = Math.floor(oldBodyBudgetBytes / attackUploads);
const mebibyte = 1024 * 1024;
/** Memory the edge may hold above its baseline while 26 uploads stall (they used to hold 256 MiB). */
const duringAttackExtraBytesMax = 48 * mebibyte;
/**
 * After the attack and a GC: the process's own resident memory (RssAnon) and heap near the
 * baseline. Total RSS also counts pages of the embedded store's memory-mapped file that the
 * uploads' parts touched (the kernel's to reclaim), hence its looser bound. Documents are
 * encrypted on their way to the store (AES-GCM per segment): the cipher's and OpenSSL's arenas
 * stay with the process, measured here at up to ~37 MiB own and ~76 MiB total; the attack these
 * bounds are about kept 312 MiB, so they sit well between the two.
 */
const afterAttackRssAnonExtraBytesMax = 64 * mebibyte;
const afterAttackRssExtraBytesMax = 128 * mebibyte;
const afterAttackHeapExtraBytesMax = 16 * mebibyte;
/** Bound on the bystander's rounds of calls while the attack lasts (each round is three calls). */
const victimRoundsMax = 2_000;

/** One stalled upload: its socket and what the server answered (if anything) before closing. */
interface StalledUpload {
  readonly socket: net.Socket;
  received: string;
  closed: boolean;
  /** Every byte handed to the socket has been flushed, or the server answered first. */
  settled: boolean;
}

/** A multipart KYC body of exactly `bytes` bytes, cut inside its document (no closing boundary). */
function truncatedKycBody(userId: string, bytes: number): Buffer {
  const boundary = 'AttackBoundary7MA4YWxkTrZu0gW';
  const fields = { userId, fullName: 'Maria da Silva', documentType: 'PASSPORT', documentNumber: 'AB123456', dateOfBirth: '1990-05-17', nationality: 'BR', city: 'São Paulo', address: 'Rua Augusta 100', email: 'maria@example.com', phone: '+55 11 99999-0000' };
  let head = '';
  for (const [name, value] of Object.entries(fields)) head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  head += `--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="passport.png"\r\nContent-Type: image/png\r\n\r\n`;
  const prefix = Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(pngBytes)]);
  return Buffer.concat([prefix, Buffer.alloc(bytes - prefix.length, 7)]);
}

function startStalledUpload(port: number, apiKey: string, body: Buffer): StalledUpload {
  const socket = net.connect(port, '127.0.0.1');
  const upload: StalledUpload = { socket, received: '', closed: false, settled: false };
  socket.on('data', (chunk) => {
    upload.received += chunk.toString('latin1');
    upload.settled = true;
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    upload.closed = true;
    upload.settled = true;
  });
  const boundary = 'AttackBoundary7MA4YWxkTrZu0gW';
  socket.write(
    `POST /kyc HTTP/1.1\r\nHost: edge\r\nX-API-Key: ${apiKey}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
      `Content-Length: ${kycUploadBodyBytesMax}\r\n\r\n`,
  );
  socket.write(body, () => (upload.settled = true));
  return upload;
}

function statusOf(upload: StalledUpload): number | null {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(upload.received);
  return match === null ? null : Number(match[1]);
}

function megabytes(bytes: number): string {
  return `${(bytes / mebibyte).toFixed(1)} MiB`;
}

describe('fair shares at the edge: one partner\'s slow uploads starve no one', () => {
  let child: EdgeChild;
  const uploads: StalledUpload[] = [];

  before(async () => {
    // A short rate window keeps the test short; the default (5 s) behaves the same, later.
    // The KYC quotas are raised: this attack is about memory and shares, not the daily submission quota.
    child = await startEdgeChild({ EDGE_BODY_RATE_WINDOW_MS: '1000', KYC_SUBMISSIONS_PER_USER_PER_DAY: '1000', KYC_SUBMISSIONS_PER_PARTNER_PER_DAY: '100000' });
  });

  after(async () => {
    for (const upload of uploads) upload.socket.destroy();
    await child?.stop();
  });

  test('26 stalled 10 MiB KYC uploads from one partner: the others are served, each upload is answered and removed, memory stays and comes back near baseline', async () => {
    const attacker = child.apiKeys[testPartners.kycOn] ?? '';
    const bystander = child.apiKeys[testPartners.kycOff] ?? '';
    const quote = (key: string): Promise<number> => call(child.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody }).then((result) => result.status);
    const smallKyc = async (key: string, userId: string): Promise<number> =>
      (await call(child.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm(userId) })).status;

    // Warm up every path the attack touches, then the baseline.
    assert.equal(await quote(bystander), 200);
    assert.equal(await smallKyc(bystander, 'warm-up-1'), 201);
    assert.equal(await smallKyc(attacker, 'warm-up-2'), 201);
    const baseline: MemorySample = await child.measure();
    const blobsBefore = await child.blobs();

    for (let index = 0; index < attackUploads; index += 1) {
      uploads.push(startStalledUpload(child.port, attacker, truncatedKycBody(`victim-${index}`, bodyBytesPerUpload)));
    }
    // The attack is in place once every upload was either answered or fully handed to the edge.
    await eventually(() => assert.ok(uploads.every((upload) => upload.settled), 'uploads still being sent'), 120_000, 50);

    // During the attack the edge holds little...
    const during = await child.measure();
    assert.ok(
      during.externalBytes - baseline.externalBytes < duringAttackExtraBytesMax,
      `memory outside the heap during the attack: ${megabytes(baseline.externalBytes)} → ${megabytes(during.externalBytes)}`,
    );
    // ...and, for as long as the attack lasts (until every stalled upload is answered), another
    // partner's quotes and small KYC submissions go through, and so do the attacker's own JSON calls.
    let kycSubmitted = 0;
    for (let round = 0; !uploads.every((upload) => statusOf(upload) !== null); round += 1) {
      assert.ok(round < victimRoundsMax, `uploads still unanswered after ${victimRoundsMax} rounds`);
      assert.equal(await quote(bystander), 200, `another partner can quote during the attack (round ${round})`);
      assert.equal(await smallKyc(bystander, 'during-attack'), 201, `another partner can submit a small KYC during the attack (round ${round})`);
      kycSubmitted += 1;
      assert.equal(await quote(attacker), 200, `uploads do not starve the attacker's own JSON calls (round ${round})`);
    }

    // Every stalled upload is answered: refused beyond the upload share (429, its body left to be
    // drained so the answer is not lost to a reset), or cut once it stops arriving (408, closed);
    // none is dropped silently.
    const statuses = uploads.map(statusOf);
    assert.ok(statuses.every((status) => status === 429 || status === 408), `statuses: ${JSON.stringify(statuses)}`);
    assert.ok(statuses.includes(408), 'the admitted uploads were cut when they stopped arriving');
    const cut = uploads.filter((upload) => statusOf(upload) === 408);
    for (const upload of cut) assert.match(upload.received, /"code":"request_timeout","reason":"Request body arriving too slowly"/);
    await eventually(() => assert.ok(cut.every((upload) => upload.closed), 'a cut upload\'s connection is closed'));
    const refused = uploads.find((upload) => statusOf(upload) === 429);
    assert.match(refused?.received ?? '', /retry-after: 1\r\n[\s\S]*"reason":"Too many uploads in flight for this API key/);
    for (const upload of uploads) upload.socket.destroy();

    // Nothing of the cut documents stays in the store, and the bystander's user record holds one
    // document however often it was submitted (each small KYC document is one part).
    assert.ok(kycSubmitted > 0);
    await eventually(async () => assert.deepEqual(await child.blobs(), { stagingEntries: 0, parts: blobsBefore.parts + 1 }), 30_000);

    const afterwards = await child.measure();
    assert.ok(
      afterwards.rssAnonBytes - baseline.rssAnonBytes < afterAttackRssAnonExtraBytesMax,
      `own resident memory: ${megabytes(baseline.rssAnonBytes)} before, ${megabytes(during.rssAnonBytes)} during, ${megabytes(afterwards.rssAnonBytes)} after`,
    );
    assert.ok(
      afterwards.rssBytes - baseline.rssBytes < afterAttackRssExtraBytesMax,
      `RSS: ${megabytes(baseline.rssBytes)} before, ${megabytes(during.rssBytes)} during, ${megabytes(afterwards.rssBytes)} after`,
    );
    assert.ok(
      afterwards.heapUsedBytes - baseline.heapUsedBytes < afterAttackHeapExtraBytesMax,
      `heap: ${megabytes(baseline.heapUsedBytes)} before, ${megabytes(afterwards.heapUsedBytes)} after`,
    );
  });
});
