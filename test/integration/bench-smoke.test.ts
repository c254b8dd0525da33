// The bench cannot rot: its tiny configuration runs inside `npm test`. Every micro suite for a few
// iterations, POST /quote against a freshly started service for about a second at 4 connections
// next to its two baselines (bare uWS, the Redis transport loop), the PostgreSQL hot-cap
// baseline (skipped with a message when no server is reachable), and hot-accept (successful
// acceptances on the hot key with raised caps) — all driven by wrk when it is installed. No timing assertions: only that
// it runs, reports every field an operator reads, checks the caps, and writes valid JSON and SVG.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from '../../bench/run.ts';
import { runBench } from '../../bench/lib/runner.ts';
import { validateResults } from '../../bench/lib/results.ts';

test('the tiny bench runs every micro suite, POST /quote next to its baselines, and writes valid results', { timeout: 420_000 }, async () => {
  const outDir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  const lines: string[] = [];
  try {
    const options = { ...parseArgs(['--quick', '--settle=0.2', 'micro', 'quote', 'baseline-postgres', 'hot-accept', `--out=${outDir}`]), log: (line: string) => lines.push(line) };
    const { results, files } = await runBench(options);

    assert.ok(existsSync(files.json) && existsSync(files.svg), 'results JSON and SVG are written');
    const parsed: unknown = JSON.parse(readFileSync(files.json, 'utf8'));
    assert.deepEqual(validateResults(parsed), []);
    const svg = readFileSync(files.svg, 'utf8');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /<\/svg>\s*$/);
    assert.match(svg, /Throughput/);

    // Every micro suite ran (or, for the edge schemas, says why not), each case with its baseline ratio.
    const groups = new Set(results.micro.map((result) => result.group));
    for (const group of ['pricing', 'limits', 'transaction', 'brcode', 'reference']) assert.ok(groups.has(group), `micro suite ${group} ran`);
    assert.ok(groups.has('schemas') || results.skipped.some((skip) => skip.scenario === 'micro/schemas'), 'schemas suite ran or was skipped with a reason');
    for (const result of results.micro) {
      assert.ok(result.opsPerSecond > 0, `${result.name} measured`);
      if (!result.isBaseline) assert.equal(typeof result.ratioToBaseline, 'number', `${result.name} has a ratio`);
    }

    // POST /quote and both baselines at 4 connections, with throughput, percentiles and error counts.
    for (const scenario of ['baseline-uws', 'baseline-transport', 'quote']) {
      const point = results.http.find((item) => item.scenario === scenario && item.connections === 4);
      assert.ok(point !== undefined, `${scenario} measured at 4 connections`);
      assert.ok(point.responses > 0, `${scenario} got answers`);
      assert.ok(point.latency.p50Ms <= point.latency.p99Ms && point.latency.p99Ms <= point.latency.p999Ms, `${scenario} percentiles are ordered`);
      assert.equal(point.errors.timeouts, 0, `${scenario} had no timeouts`);
    }
    const quote = results.http.find((item) => item.scenario === 'quote');
    assert.ok(quote !== undefined);
    assert.equal(quote.statusCodes['200'], quote.responses - quote.errors.non2xx);
    assert.ok(Object.hasOwn(quote.ratios, 'bare-uws') && Object.hasOwn(quote.ratios, 'transport'), 'quote is compared with both baselines');

    // PostgreSQL: measured with a clean cap check, or skipped with the reason.
    const postgres = results.http.find((item) => item.scenario === 'baseline-postgres');
    if (postgres === undefined) {
      const skip = results.skipped.find((item) => item.scenario === 'baseline-postgres');
      assert.ok(skip !== undefined, 'the PostgreSQL baseline is skipped with a message when unreachable');
      assert.match(skip.reason, /PostgreSQL/);
    } else {
      const check = results.capChecks.find((item) => item.system === 'postgres');
      assert.ok(check !== undefined && check.ok, `PostgreSQL cap check: ${JSON.stringify(check?.violations)}`);
    }
    // The load generator is wrk wherever it is installed (.ci/run installs it).
    if (existsSync('/usr/bin/wrk') || existsSync('/usr/local/bin/wrk')) assert.match(String(results.config['loadGenerator']), /^wrk /);

    // hot-accept: every acceptance of the measured phase succeeds, each is listed, and Redis work per request is counted.
    const accept = results.http.find((item) => item.scenario === 'hot-accept' && item.system === 'service');
    assert.ok(accept !== undefined, `hot-accept measured: ${JSON.stringify(results.skipped)}`);
    assert.ok(accept.responses > 0 && accept.statusCodes['200'] === accept.responses, `every hot-accept answer is a 200: ${JSON.stringify(accept.statusCodes)}`);
    assert.ok(accept.redisCallsPerResponse !== undefined && (accept.redisCallsPerResponse['xadd'] ?? 0) > 0, 'Redis commands per acceptance are counted');
    const acceptCheck = results.capChecks.find((item) => item.scenario === 'hot-accept' && item.system === 'service');
    assert.ok(acceptCheck !== undefined && acceptCheck.ok, `hot-accept check: ${JSON.stringify(acceptCheck?.violations)}`);
    assert.ok(acceptCheck.acceptedTransactions >= accept.responses, 'every 200 of the measured phase is listed');
    assert.ok(results.targets.length > 0 && lines.some((line) => line.startsWith('results: ')), 'targets and file names are reported');
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
