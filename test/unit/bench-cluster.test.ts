// `npm run bench -- quote --redis=cluster`: the option is parsed strictly, and the Redis figures of
// a cluster point (commands and CPU per response) are read from every node the REDIS_URL lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redisNodeUrls } from '../../bench/lib/cpu.ts';
import { parseArgs } from '../../bench/run.ts';

test('a cluster URL names one server per node; a plain URL is itself', () => {
  assert.deepEqual(redisNodeUrls('redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002'), [
    'redis://127.0.0.1:7000',
    'redis://127.0.0.1:7001',
    'redis://127.0.0.1:7002',
  ]);
  assert.deepEqual(redisNodeUrls('redis://127.0.0.1:6379'), ['redis://127.0.0.1:6379']);
});

test('--redis takes single or cluster, nothing else', () => {
  assert.equal(parseArgs(['quote', '--redis=cluster']).redis, 'cluster');
  assert.equal(parseArgs(['quote']).redis, 'single');
  assert.throws(() => parseArgs(['quote', '--redis=sentinel']), /--redis must be single or cluster/);
});
