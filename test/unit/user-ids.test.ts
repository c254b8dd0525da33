// User ids: one user in any Unicode form (NFKC), invisible and control characters refused; the
// partners file's disabled users read the same way (the e2e side is test/e2e/input-rules.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePartners } from '../../src/config/partners.ts';
import { readUserId, userIdMatchForm } from '../../src/domain/user-ids.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory, partnerFromConfig } from '../../src/ports/partners.ts';

const charsMax = 128;

test('every spelling of one id reads as one normal form; ASCII is unchanged', () => {
  const cases: Array<[string, string]> = [
    ['user-42', 'user-42'],
    ['  user-42 ', 'user-42'],
    ['jose\u0301', 'jos\u00e9'], // decomposed accent
    ['jos\u00e9', 'jos\u00e9'],
    ['\uff55\uff53\uff45\uff52', 'user'], // full-width
    ['\ufb01le', 'file'], // ligature
    ['a\u00a0b', 'a b'], // non-breaking space
    ['\u3000user\u3000', 'user'], // ideographic spaces around
    ['Alice', 'Alice'], // no case folding
    ['\u7528\u6237', '\u7528\u6237'], // CJK stays as it is
  ];
  for (const [sent, normal] of cases) {
    assert.deepEqual(readUserId(sent, charsMax), { ok: true, value: normal }, JSON.stringify(sent));
    assert.equal(userIdMatchForm(sent), normal);
  }
});

test('invisible, format and control characters are refused, naming the code point and never the id', () => {
  const cases: Array<[string, string]> = [
    ['baduser\u200b', 'U+200B'], // zero-width space (Cf)
    ['bad\u00adbuser', 'U+00AD'], // soft hyphen (Cf)
    ['bad\u2060user', 'U+2060'], // word joiner (Cf)
    ['\u202ebaduser', 'U+202E'], // right-to-left override (Cf)
    ['bad\u200duser', 'U+200D'], // zero-width joiner (Cf)
    ['\ufeffbaduser', 'U+FEFF'], // byte order mark (Cf)
    ['bad\u0000user', 'U+0000'], // NUL (Cc)
    ['bad\u0085user', 'U+0085'], // next line (Cc)
    ['bad\u2028user', 'U+2028'], // line separator (Zl)
    ['bad\ufe0fuser', 'U+FE0F'], // variation selector (default ignorable)
    ['bad\u3164user', 'U+3164'], // Hangul filler (default ignorable, a letter by category)
    ['bad\u034fuser', 'U+034F'], // combining grapheme joiner (default ignorable)
    ['bad\ud800user', 'U+D800'], // lone surrogate (Cs)
    ['bad\uffffuser', 'U+FFFF'], // noncharacter (Cn)
    ['bad\u{e0041}user', 'U+E0041'], // tag character (Cf)
  ];
  for (const [sent, codePoint] of cases) {
    const read = readUserId(sent, charsMax);
    assert.equal(read.ok, false, JSON.stringify(sent));
    if (read.ok) continue;
    assert.match(read.reason, /^must not contain invisible, formatting or control characters/);
    assert.ok(read.reason.includes(codePoint), `${read.reason} names ${codePoint}`);
    assert.ok(!read.reason.includes('user'), 'the id is not echoed');
  }
  assert.deepEqual(readUserId(' \u3000 ', charsMax), { ok: false, reason: 'must not be empty' });
  // U+FDFA expands to 18 characters under NFKC: the bound holds after normalising.
  assert.deepEqual(readUserId('\ufdfa'.repeat(8), charsMax), { ok: false, reason: `must be at most ${charsMax} characters` });
});

test('the partners file reads disabledUsers the same way: normalised, or start-up stops naming the field', () => {
  const partner = (disabledUsers: string[]) => ({
    partners: [{ id: 'acme', name: 'Acme', apiKeySha256: ['0'.repeat(64)], kycEnabled: true, kybApproved: false, disabledUsers }],
  });
  const [acme] = parsePartners(partner(['jose\u0301', '\uff42\uff41\uff44']), 'partners.json');
  assert.deepEqual(acme?.disabledUsers, ['jos\u00e9', 'bad']);
  assert.throws(() => parsePartners(partner(['ok', 'bad\u200buser']), 'partners.json'), /partners\.json: partners\.0\.disabledUsers\.1: must not contain invisible.*U\+200B/);
  assert.ok(acme);
  const directory = new PartnerDirectory(createKeyRing());
  directory.set(partnerFromConfig(acme));
  for (const form of ['jos\u00e9', 'jose\u0301', 'bad', '\uff42\uff41\uff44', ' bad ']) assert.equal(directory.isUserDisabled('acme', form), true, JSON.stringify(form));
  assert.equal(directory.isUserDisabled('acme', 'Bad'), false, 'no case folding');
});
