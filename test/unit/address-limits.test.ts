// The pure pieces of the per-address limits: reading addresses and CIDR ranges, choosing the
// client behind trusted proxies, the bucket per address, and the sampled log of refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressBucketKey, cidrContains, formatIp, parseCidr, parseCidrList, parseIp } from '../../src/domain/ip-address.ts';
import { createClientAddressResolver } from '../../src/edge/client-address.ts';
import { createAddressLimiter } from '../../src/edge/address-limiter.ts';
import { createSampledAddressLog } from '../../src/edge/address-log.ts';

test('addresses: IPv4, IPv6 in every spelling uWS and proxies use, IPv4-mapped read as IPv4; garbage refused', () => {
  const table: Array<[string, string | null]> = [
    ['127.0.0.1', '127.0.0.1'],
    ['0000:0000:0000:0000:0000:0000:0000:0001', '0:0:0:0:0:0:0:1'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['[2001:db8::5]', '2001:db8:0:0:0:0:0:5'],
    ['fe80::1%eth0', 'fe80:0:0:0:0:0:0:1'],
    ['0000:0000:0000:0000:0000:ffff:7f00:0001', '127.0.0.1'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['64:ff9b::192.0.2.33', '64:ff9b:0:0:0:0:c000:221'],
    ['256.1.1.1', null],
    ['01.2.3.4', null],
    ['1.2.3', null],
    ['1::2::3', null],
    ['1:2:3:4:5:6:7:8:9', null],
    ['12345::', null],
    ['unknown', null],
    ['', null],
  ];
  for (const [text, expected] of table) {
    const bytes = parseIp(text);
    assert.equal(bytes === null ? null : formatIp(bytes), expected, text);
  }
});

test('bucket keys: an IPv4 address is its own key, IPv6 addresses share their /64', () => {
  assert.equal(addressBucketKey('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1');
  assert.equal(addressBucketKey('2001:db8:1:2:aaaa::1'), addressBucketKey('2001:db8:1:2:bbbb::9'));
  assert.notEqual(addressBucketKey('2001:db8:1:2::1'), addressBucketKey('2001:db8:1:3::1'));
});

test('CIDR ranges and lists: prefixes, single addresses, IPv4-mapped ranges; a bad entry is named', () => {
  const inRange = (cidr: string, address: string): boolean => {
    const range = parseCidr(cidr);
    const bytes = parseIp(address);
    assert.ok(range !== null && bytes !== null, `${cidr} ${address}`);
    return cidrContains(range, bytes);
  };
  assert.ok(inRange('10.0.0.0/8', '10.255.1.2'));
  assert.ok(!inRange('10.0.0.0/8', '11.0.0.1'));
  assert.ok(inRange('192.168.1.0/23', '192.168.0.7'));
  assert.ok(!inRange('192.168.2.0/23', '192.168.1.7'));
  assert.ok(inRange('10.1.2.3', '10.1.2.3'));
  assert.ok(!inRange('10.1.2.3', '10.1.2.4'));
  assert.ok(inRange('2001:db8::/32', '2001:db8:ffff::1'));
  assert.ok(!inRange('2001:db8::/32', '10.0.0.1'));
  assert.ok(inRange('::ffff:10.0.0.0/104', '10.9.9.9'));
  assert.equal(parseCidr('10.0.0.0/33'), null);
  assert.equal(parseCidr('10.0.0.0/8/8'), null);
  const list = parseCidrList(' 10.0.0.0/8, 192.168.0.1 2001:db8::/32 ');
  assert.ok(list.ok && list.cidrs.length === 3);
  const bad = parseCidrList('10.0.0.0/8,proxy.example');
  assert.ok(!bad.ok && bad.reason.includes('proxy.example'));
  assert.deepEqual(parseCidrList(''), { ok: true, cidrs: [] });
});

test('the client behind trusted proxies: X-Forwarded-For is read from the right and only from a trusted peer', () => {
  const list = parseCidrList('10.0.0.0/8');
  assert.ok(list.ok);
  const resolver = createClientAddressResolver(list.cidrs);
  // Untrusted peer: the header is ignored.
  assert.equal(resolver.resolve('198.51.100.7', '1.2.3.4'), '198.51.100.7');
  // Trusted peer: the first untrusted hop from the right; what the client wrote further left is ignored.
  assert.equal(resolver.resolve('10.0.0.2', '6.6.6.6, 203.0.113.9, 10.0.0.1'), '203.0.113.9');
  // Garbage stops the walk at the last trusted hop.
  assert.equal(resolver.resolve('10.0.0.2', '203.0.113.9, not-an-ip'), '10.0.0.2');
  // All hops trusted: the leftmost.
  assert.equal(resolver.resolve('10.0.0.2', '10.0.0.9'), '10.0.0.9');
  assert.equal(resolver.resolve('10.0.0.2', undefined), '10.0.0.2');
  // No trusted proxies: always the peer (IPv4-mapped written as IPv4).
  assert.equal(createClientAddressResolver([]).resolve('0000:0000:0000:0000:0000:ffff:0a00:0002', '1.2.3.4'), '10.0.0.2');
});

test('the address limiter: a bucket per address, `check` charges nothing, memory bounded', () => {
  let nowMs = 0;
  const limiter = createAddressLimiter({ config: { ratePerSecond: 1, burst: 2 }, addressesMax: 3, nowMs: () => nowMs });
  assert.equal(limiter.check('10.0.0.1').allowed, true);
  assert.deepEqual([limiter.take('10.0.0.1').allowed, limiter.take('10.0.0.1').allowed, limiter.take('10.0.0.1').allowed], [true, true, false]);
  assert.deepEqual(limiter.check('10.0.0.1'), { allowed: false, retryAfterSeconds: 1 });
  assert.equal(limiter.take('::ffff:10.0.0.1').allowed, false, 'the same address in its IPv4-mapped form');
  assert.equal(limiter.take('10.0.0.2').allowed, true);
  nowMs += 1_000;
  assert.equal(limiter.take('10.0.0.1').allowed, true, 'refilled');
  for (let index = 0; index < 10; index += 1) limiter.take(`192.0.2.${index}`);
  assert.equal(limiter.size(), 3);
});

test('the sampled log: one line per address per interval with the count in between, and a line budget', () => {
  let nowMs = 0;
  const lines: Array<Readonly<Record<string, unknown>>> = [];
  const log = createSampledAddressLog({ write: (fields) => lines.push(fields), nowMs: () => nowMs, intervalMs: 60_000, linesPerIntervalMax: 2 });
  for (let index = 0; index < 100; index += 1) log.note('10.0.0.1', { route: '/quote' });
  assert.equal(lines.length, 1);
  assert.deepEqual(lines[0], { route: '/quote', address: '10.0.0.1', notLoggedSinceLastLine: 0 });
  log.note('10.0.0.2', {});
  log.note('10.0.0.3', {}); // over the budget of 2 lines a minute
  assert.equal(lines.length, 2);
  nowMs += 60_000;
  assert.equal(log.note('10.0.0.1', {}), true);
  assert.deepEqual(lines[2], { address: '10.0.0.1', notLoggedSinceLastLine: 99, notLoggedOverBudget: 1 });
});
