// What a partner developer gets from a running service without reading the code: the OpenAPI 3.1
// document at GET /openapi.json (valid for a real validator, the same as docs/openapi.json), the
// reference page at GET /docs served entirely by the service (no CDN, under a CSP), and a request
// id in every error body — the same as the X-Request-Id header, also on an idempotent replay.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { teardown } from '../support/teardown.ts';
import { call } from './support.ts';

describe('the API reference served by the service', () => {
  let harness: ServiceHarness | undefined;
  const started = (): ServiceHarness => harness ?? assert.fail('the service did not start');

  before(async () => {
    harness = await startServiceHarness();
  });
  after(() => teardown(() => harness?.stop()));

  test('GET /openapi.json is the committed docs/openapi.json and valid OpenAPI 3.1', async () => {
    const response = await call(started().baseUrl, 'GET', '/openapi.json');
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(response.text, readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(response.text) as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    assert.equal(validator.version, '3.1');
  });

  test('GET /docs is a page whose every script and style comes from this service, under a CSP', async () => {
    const page = await call(started().baseUrl, 'GET', '/docs');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self';/);
    assert.doesNotMatch(page.text, /https?:\/\//, 'no CDN or other host');
    assert.doesNotMatch(page.text, /<script>/, 'no inline script (the CSP forbids it)');
    const assets = [...page.text.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)].map((match) => match[1] ?? '');
    assert.deepEqual(assets.sort(), ['/docs/favicon-32x32.png', '/docs/start.js', '/docs/swagger-ui-bundle.js', '/docs/swagger-ui.css']);
    for (const asset of assets) {
      const response = await call(started().baseUrl, 'GET', asset);
      assert.equal(response.status, 200, asset);
      assert.match(response.headers.get('content-type') ?? '', asset.endsWith('.css') ? /^text\/css/ : asset.endsWith('.png') ? /^image\/png/ : /^text\/javascript/, asset);
    }
    assert.match((await call(started().baseUrl, 'GET', '/docs/start.js')).text, /url: '\/openapi\.json'/);
    // Only the page's own files are served from the package, nothing else of node_modules.
    const other = await call(started().baseUrl, 'GET', '/docs/package.json');
    assert.equal(other.status, 404);
  });

  test('every error body names its request id, the X-Request-Id of that answer, replays included', async () => {
    const key = started().apiKeys[testPartners.kycOff] ?? '';
    const tooSmall = { amount: 1, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
    const first = await call(started().baseUrl, 'POST', '/quote', { key, body: tooSmall, idempotencyKey: 'ref-min-1', headers: { 'x-request-id': 'first-try' } });
    assert.equal(first.status, 400);
    assert.equal(first.json['code'], 'minimum');
    assert.equal(first.json['request_id'], 'first-try');
    const replay = await call(started().baseUrl, 'POST', '/quote', { key, body: tooSmall, idempotencyKey: 'ref-min-1', headers: { 'x-request-id': 'second-try' } });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.json['request_id'], 'second-try', 'the replay names the request that got it');
    const unknown = await call(started().baseUrl, 'GET', '/no-such-endpoint');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json['request_id'], unknown.headers.get('x-request-id'));
  });
});
