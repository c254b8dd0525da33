// The edge's request counters and latency histogram as Prometheus text: what a scrape shows after a
// few requests, with bounded labels and cumulative buckets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccessLogEntry } from '../../src/edge/access-log.ts';
import { createEdgeMetrics } from '../../src/edge/routes/metrics.ts';

function entry(method: string, route: string | null, status: number | null, durationMs: number): AccessLogEntry {
  return { method, route, status, durationMs, requestId: 'r', partnerId: null, requestBytes: 0, aborted: status === null };
}

test('counts per route, method and status; unknown methods and routes fold into bounded labels', () => {
  const metrics = createEdgeMetrics();
  metrics.observe(entry('POST', '/quote', 200, 3));
  metrics.observe(entry('POST', '/quote', 200, 4));
  metrics.observe(entry('POST', '/quote', 400, 1));
  metrics.observe(entry('BREW', null, 404, 0.2));
  metrics.observe(entry('GET', '/transaction/:id', null, 7));
  const text = metrics.render({ inFlightRequests: 2, actorRequestsPending: 1, bodyBytesInFlight: 0, uploadsInFlight: 0 });
  const counters = text.split('\n').filter((line) => line.startsWith('edge_http_requests_total{'));
  assert.deepEqual(counters, [
    'edge_http_requests_total{route="/quote",method="POST",status="200"} 2',
    'edge_http_requests_total{route="/quote",method="POST",status="400"} 1',
    'edge_http_requests_total{route="/transaction/:id",method="GET",status="aborted"} 1',
    'edge_http_requests_total{route="unmatched",method="OTHER",status="404"} 1',
  ]);
  assert.match(text, /^edge_http_requests_in_flight 2$/m);
  assert.match(text, /^edge_actor_requests_pending 1$/m);
});

test('latency buckets are cumulative and the +Inf bucket equals the count', () => {
  const metrics = createEdgeMetrics();
  for (const ms of [0.5, 3, 3, 40, 20_000, 90_000]) metrics.observe(entry('POST', '/quote', 200, ms));
  const text = metrics.render({ inFlightRequests: 0, actorRequestsPending: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
  const bucket = (le: string): number => Number(new RegExp(`^edge_http_request_duration_seconds_bucket\\{route="/quote",le="${le}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  assert.equal(bucket('0.001'), 1);
  assert.equal(bucket('0.005'), 3);
  assert.equal(bucket('0.05'), 4);
  assert.equal(bucket('30'), 5);
  assert.equal(bucket('\\+Inf'), 6);
  assert.match(text, /^edge_http_request_duration_seconds_count\{route="\/quote"\} 6$/m);
});

test('a latency exactly on a bucket bound counts in that bucket and every later one', () => {
  const metrics = createEdgeMetrics();
  for (const ms of [1, 2.5, 2.5000001, 30_000]) metrics.observe(entry('POST', '/quote', 200, ms));
  const text = metrics.render({ inFlightRequests: 0, actorRequestsPending: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
  const bucket = (le: string): number => Number(new RegExp(`^edge_http_request_duration_seconds_bucket\\{route="/quote",le="${le}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  assert.equal(bucket('0.001'), 1);
  assert.equal(bucket('0.0025'), 2);
  assert.equal(bucket('0.005'), 3);
  assert.equal(bucket('10'), 3);
  assert.equal(bucket('30'), 4);
  assert.equal(bucket('\\+Inf'), 4);
});

test('what the fair shares hold right now: buffered body bytes and uploads in flight', () => {
  const metrics = createEdgeMetrics();
  const text = metrics.render({ inFlightRequests: 3, actorRequestsPending: 0, bodyBytesInFlight: 4096, uploadsInFlight: 2 });
  assert.match(text, /^# TYPE edge_http_body_bytes_in_flight gauge$/m);
  assert.match(text, /^edge_http_body_bytes_in_flight 4096$/m);
  assert.match(text, /^# TYPE edge_http_uploads_in_flight gauge$/m);
  assert.match(text, /^edge_http_uploads_in_flight 2$/m);
});
