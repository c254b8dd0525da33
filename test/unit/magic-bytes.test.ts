import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkDocumentType,
  normaliseDeclaredType,
  sniffDocumentType,
  type DocumentMimeType,
} from '../../src/edge/magic-bytes.ts';

function bytes(...parts: (string | number[])[]): Buffer {
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))));
}

function ftyp(majorBrand: string, compatible: string[] = []): Buffer {
  const size = 16 + 4 * compatible.length;
  const header = Buffer.alloc(4);
  header.writeUInt32BE(size);
  return bytes(header.toString('latin1'), 'ftyp', majorBrand, [0, 0, 0, 0], compatible.join(''), 'rest of file');
}

const samples: Record<DocumentMimeType, Buffer> = {
  'image/jpeg': bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], 'JFIF'),
  'image/png': bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0, 0, 0, 13], 'IHDR'),
  'image/webp': bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 '),
  'image/heic': ftyp('heic', ['mif1', 'heic']),
  'application/pdf': bytes('%PDF-1.7\n%âãÏÓ\n'),
};

describe('sniffDocumentType', () => {
  for (const [type, sample] of Object.entries(samples)) {
    test(`recognises ${type}`, () => {
      assert.equal(sniffDocumentType(sample), type);
    });
  }

  const heicBrands = ['heic', 'heix', 'mif1', 'msf1', 'hevc'];
  for (const brand of heicBrands) {
    test(`reads ftyp major brand '${brand}' as HEIC`, () => {
      assert.equal(sniffDocumentType(ftyp(brand)), 'image/heic');
    });
  }

  test('reads HEIC from a compatible brand, but not AVIF', () => {
    assert.equal(sniffDocumentType(ftyp('xxxx', ['mif1', 'heic'])), 'image/heic');
    assert.equal(sniffDocumentType(ftyp('avif', ['mif1', 'miaf'])), null);
    assert.equal(sniffDocumentType(ftyp('avif', ['heic'])), null);
    assert.equal(sniffDocumentType(ftyp('isom', ['mp41'])), null, 'an MP4 video is not a document');
  });

  test('returns null for other and truncated content', () => {
    const rejected: Buffer[] = [
      Buffer.alloc(0),
      bytes([0xff, 0xd8]),
      bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a]),
      bytes('RIFF', [0, 0, 0, 0], 'WAVE'),
      bytes('RIFF'),
      bytes('%PDF'),
      bytes(' %PDF-1.4'),
      bytes('GIF89a'),
      bytes('<html>'),
      bytes([0, 0, 0, 0x18], 'ftyp'),
      bytes([0, 0, 0, 0x18], 'ftypheic').subarray(0, 10),
    ];
    for (const sample of rejected) assert.equal(sniffDocumentType(sample), null, sample.toString('latin1'));
  });

  test('works on a Uint8Array view into a larger buffer', () => {
    const big = Buffer.concat([Buffer.from('junk'), ftyp('heic')]);
    assert.equal(sniffDocumentType(new Uint8Array(big.buffer, big.byteOffset + 4, big.length - 4)), 'image/heic');
  });
});

describe('checkDocumentType', () => {
  test('accepts a declared type that matches the content', () => {
    for (const [type, sample] of Object.entries(samples)) {
      assert.deepEqual(checkDocumentType(type, sample), { ok: true, type });
    }
    assert.deepEqual(checkDocumentType('IMAGE/JPG; name=x', samples['image/jpeg']), { ok: true, type: 'image/jpeg' });
    assert.deepEqual(checkDocumentType('image/heif', samples['image/heic']), { ok: true, type: 'image/heic' });
  });

  test('rejects a mismatch between declared and sniffed type', () => {
    const result = checkDocumentType('image/png', samples['image/jpeg']);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.problem, 'type_mismatch');
      assert.match(result.reason, /declared as image\/png but its content is image\/jpeg/);
    }
  });

  test('rejects unsupported declared types and unrecognised content', () => {
    const declared = checkDocumentType('text/plain', samples['application/pdf']);
    assert.equal(declared.ok ? 'ok' : declared.problem, 'unsupported_declared_type');
    const content = checkDocumentType('application/pdf', Buffer.from('not a pdf'));
    assert.equal(content.ok ? 'ok' : content.problem, 'unrecognised_content');
  });

  test('normaliseDeclaredType', () => {
    assert.equal(normaliseDeclaredType(' Application/PDF ; charset=binary'), 'application/pdf');
    assert.equal(normaliseDeclaredType('image/gif'), null);
    assert.equal(normaliseDeclaredType(''), null);
  });
});
