// BR Code codec: the FACTS CRC vector, payloads hand-assembled to the published layout (CRC from a
// bit-serial reference written here), seeded random encode→decode round trips, and every rejection.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  brCodeLengthMax,
  crc16CcittFalse,
  decodeBrCode,
  encodeBrCode,
  toDecoderResponse,
} from '../../src/rails/brcode.ts';
import type { BrCode, BrCodeEncodeInput } from '../../src/rails/brcode.ts';

// Reference CRC-16/CCITT-FALSE as a bit-serial shift register, independent of the table-free loop
// in the implementation: feed each message bit, xor the polynomial when the bit leaving differs.
function referenceCrc(text: string): string {
  let register = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    for (let bit = 7; bit >= 0; bit -= 1) {
      const incoming = (byte >> bit) & 1;
      const leaving = (register >> 15) & 1;
      register = (register << 1) & 0xffff;
      if ((incoming ^ leaving) === 1) register ^= 0x1021;
    }
  }
  return register.toString(16).toUpperCase().padStart(4, '0');
}

/** `body` ends with `6304`; appends the reference CRC. */
function withCrc(body: string): string {
  assert.ok(body.endsWith('6304'), 'body ends with the CRC tag');
  return body + referenceCrc(body);
}

function decodeOk(payload: string): BrCode {
  const result = decodeBrCode(payload);
  if (!result.ok) assert.fail(`expected ${payload} to decode, got ${result.code}: ${result.reason}`);
  return result.value;
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const factsBody =
  '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***6304';
const factsPayload = `${factsBody}1D3D`;

// Static: e-mail key with a description, amount, postal code, txid, an accented city, 01 = 11.
const staticBody =
  '000201' +
  '010211' +
  '2663' +
  '0014br.gov.bcb.pix' +
  '0118fulano@example.com' +
  '0219Pagamento pedido 42' +
  '52040000' +
  '5303986' +
  '540512.34' +
  '5802BR' +
  '5913Fulano de Tal' +
  '6009São Paulo' +
  '610801310100' +
  '6214' +
  '0510PEDIDO0042' +
  '6304';

// Dynamic: payload URL (no scheme), single use, amount, txid `***`.
const dynamicUrl = 'qr.example.com.br/pix/v2/cob/7d9f0335-8dcc-4054-9bf9-0dbd61d36906';
const dynamicBody =
  '000201' +
  '010212' +
  '2687' +
  '0014br.gov.bcb.pix' +
  `2565${dynamicUrl}` +
  '52040000' +
  '5303986' +
  '5406100.00' +
  '5802BR' +
  '5914Loja do Bairro' +
  '6014Rio de Janeiro' +
  '62070503***' +
  '6304';

describe('CRC-16/CCITT-FALSE', () => {
  test('the FACTS vector gives 1D3D; the standard check string gives 29B1', () => {
    assert.equal(crc16CcittFalse(factsBody), '1D3D');
    assert.equal(referenceCrc(factsBody), '1D3D');
    assert.equal(crc16CcittFalse('123456789'), '29B1');
  });

  test('agrees with the reference on UTF-8 text, and counts bytes not characters', () => {
    for (const text of ['', 'a', 'São Paulo', 'Ação ção', 'emoji 😀 ok', factsBody + 'ÇÃÕ']) {
      assert.equal(crc16CcittFalse(text), referenceCrc(text), text);
    }
    assert.notEqual(crc16CcittFalse('São'), crc16CcittFalse('Sao'));
    assert.match(crc16CcittFalse(''), /^[0-9A-F]{4}$/);
  });
});

describe('decoding published-format payloads', () => {
  test('the FACTS static payload', () => {
    const decoded = decodeOk(factsPayload);
    assert.equal(decoded.kind, 'static');
    assert.deepEqual(decoded.merchantAccount, {
      gui: 'br.gov.bcb.pix',
      key: '123e4567-e12b-12d1-a456-426655440000',
      keyType: 'evp',
    });
    assert.equal(decoded.merchantCategoryCode, '0000');
    assert.equal(decoded.currency, '986');
    assert.equal(decoded.countryCode, 'BR');
    assert.equal(decoded.merchantName, 'Fulano de Tal');
    assert.equal(decoded.merchantCity, 'BRASILIA');
    assert.equal(decoded.amount, undefined);
    assert.equal(decoded.txid, undefined);
    assert.equal(decoded.crc, '1D3D');
    assert.deepEqual(
      decoded.fields.map((field) => field.id),
      ['00', '26', '52', '53', '58', '59', '60', '62', '63'],
    );
    assert.deepEqual(decoded.fields[7]?.children, [{ id: '05', value: '***' }]);
    assert.deepEqual(toDecoderResponse(decoded), {
      account: '123e4567-e12b-12d1-a456-426655440000',
      currency: 'BRL',
      name: 'Fulano de Tal',
    });
  });

  test('a static payload with every optional field and an accented city (lengths in characters)', () => {
    const payload = withCrc(staticBody);
    const decoded = decodeOk(payload);
    assert.equal(decoded.kind, 'static');
    assert.equal(decoded.pointOfInitiation, 'reusable');
    assert.deepEqual(decoded.merchantAccount, {
      gui: 'br.gov.bcb.pix',
      key: 'fulano@example.com',
      keyType: 'email',
      description: 'Pagamento pedido 42',
    });
    assert.equal(decoded.amount, '12.34');
    assert.equal(decoded.merchantCity, 'São Paulo');
    assert.equal(decoded.postalCode, '01310100');
    assert.equal(decoded.txid, 'PEDIDO0042');
    assert.deepEqual(toDecoderResponse(decoded), {
      account: 'fulano@example.com',
      amount: '12.34',
      currency: 'BRL',
      name: 'Fulano de Tal',
    });
  });

  test('a dynamic payload: account is the payload URL; the encoder writes the same bytes', () => {
    const payload = withCrc(dynamicBody);
    const decoded = decodeOk(payload);
    assert.equal(decoded.kind, 'dynamic');
    assert.equal(decoded.pointOfInitiation, 'single_use');
    assert.deepEqual(decoded.merchantAccount, { gui: 'br.gov.bcb.pix', url: dynamicUrl });
    const response = toDecoderResponse(decoded);
    assert.deepEqual(response, { account: dynamicUrl, amount: '100.00', currency: 'BRL', name: 'Loja do Bairro' });
    assert.equal('taxId' in response, false);
    assert.deepEqual(
      encodeBrCode({ url: dynamicUrl, amount: '100.00', merchantName: 'Loja do Bairro', merchantCity: 'Rio de Janeiro' }),
      { ok: true, payload },
    );
  });

  test('the encoder reproduces the FACTS payload exactly', () => {
    assert.deepEqual(
      encodeBrCode({ key: '123e4567-e12b-12d1-a456-426655440000', merchantName: 'Fulano de Tal', merchantCity: 'BRASILIA' }),
      { ok: true, payload: factsPayload },
    );
  });

  test('taxId is the key when it is a CPF or CNPJ, and only then', () => {
    const cpfPayload = withCrc(
      '00020126330014br.gov.bcb.pix011152998224725520400005303986540510.005802BR5913João da Silva6009São Paulo62070503***6304',
    );
    const cpf = toDecoderResponse(decodeOk(cpfPayload));
    assert.deepEqual(cpf, { account: '52998224725', amount: '10.00', currency: 'BRL', name: 'João da Silva', taxId: '52998224725' });
    const cnpjPayload = withCrc(
      '00020126360014br.gov.bcb.pix0114112223330001815204000053039865802BR5907ACME SA6008CURITIBA62070503***6304',
    );
    assert.equal(toDecoderResponse(decodeOk(cnpjPayload)).taxId, '11222333000181');
    const phonePayload = withCrc(
      '00020126360014br.gov.bcb.pix0114+55119123456785204000053039865802BR5907ACME SA6008CURITIBA62070503***6304',
    );
    const phone = toDecoderResponse(decodeOk(phonePayload));
    assert.equal(phone.account, '+5511912345678');
    assert.equal('taxId' in phone, false);
  });

  test('GUI is matched ignoring case; CRC hex may be lower case; surrounding whitespace is ignored', () => {
    const upperGui = withCrc(factsBody.replace('br.gov.bcb.pix', 'BR.GOV.BCB.PIX'));
    assert.equal(decodeOk(upperGui).merchantAccount.gui, 'BR.GOV.BCB.PIX');
    assert.equal(decodeOk(`${factsBody}1d3d`).crc, '1D3D');
    assert.equal(decodeOk(`  ${factsPayload}\r\n`).merchantName, 'Fulano de Tal');
  });

  test('names with accents: precomposed and decomposed are both counted in code points', () => {
    const composed = withCrc(factsBody.replace('5913Fulano de Tal', '5914Conceição Ltda').replace('6008BRASILIA', '6009São Paulo'));
    assert.equal(decodeOk(composed).merchantName, 'Conceição Ltda');
    // 'Sa\u0303o Paulo' is 10 code points: the decoder keeps the text as sent (no normalisation).
    const decomposed = withCrc(factsBody.replace('6008BRASILIA', '6010Sa\u0303o Paulo'));
    assert.equal(decodeOk(decomposed).merchantCity, 'Sa\u0303o Paulo');
    // A generator counting UTF-8 bytes writes 10 for 'São Paulo': that is not our reading.
    const byteCounted = decodeBrCode(withCrc(factsBody.replace('6008BRASILIA', '6010São Paulo')));
    assert.equal(byteCounted.ok, false);
    // Astral characters are one character each.
    assert.equal(decodeOk(withCrc(factsBody.replace('5913Fulano de Tal', '5906Café 😀'))).merchantName, 'Café 😀');
  });

  test('unknown fields and other schemes are kept in the raw tree; templates 80-99 are parsed', () => {
    const body = factsBody
      .replace('5204', '27290015com.example.pay0106abc123' + '5204')
      .replace('62070503***', '62070503***' + '80150011hello.world');
    const decoded = decodeOk(withCrc(body));
    const other = decoded.fields.find((field) => field.id === '27');
    assert.deepEqual(other?.children, [
      { id: '00', value: 'com.example.pay' },
      { id: '01', value: 'abc123' },
    ]);
    assert.equal(decoded.fields.find((field) => field.id === '80')?.children?.[0]?.value, 'hello.world');
  });

  test('a payload of exactly the maximum length decodes', () => {
    let body = factsBody.slice(0, -4);
    let id = 80;
    while (brCodeLengthMax - body.length - 8 > 0) {
      const remaining = brCodeLengthMax - body.length - 8;
      // A field of n characters of text is 8 + n long (ID, LEN, sub-ID, sub-LEN); keep ≥ 9 for the next.
      const fieldLength = remaining <= 103 ? remaining : Math.min(103, remaining - 9);
      const text = 'x'.repeat(fieldLength - 8);
      body += `${id}${String(text.length + 4).padStart(2, '0')}00${String(text.length).padStart(2, '0')}${text}`;
      id += 1;
    }
    const payload = withCrc(`${body}6304`);
    assert.equal(payload.length, brCodeLengthMax);
    decodeOk(payload);
  });
});

describe('decoding rejections', () => {
  function rejects(payload: unknown, code: string, name: string): string {
    const result = decodeBrCode(payload);
    assert.equal(result.ok, false, `${name}: expected rejection`);
    if (result.ok) return '';
    assert.equal(result.code, code, `${name}: ${result.reason}`);
    assert.ok(result.reason.length > 0);
    return result.reason;
  }

  test('input that is not a payload at all', () => {
    for (const input of [undefined, null, 42, {}, [], Buffer.from(factsPayload)]) {
      rejects(input, 'not_a_string', String(input));
    }
    rejects('', 'empty', 'empty');
    rejects(' \n ', 'empty', 'blank');
    rejects('0'.repeat(brCodeLengthMax + 1), 'too_long', 'max + 1');
    rejects('0'.repeat(5000), 'too_long', 'very long');
  });

  test('CRC', () => {
    assert.equal(rejects(`${factsBody}1D3E`, 'crc_mismatch', 'wrong crc'), 'CRC mismatch');
    rejects(factsPayload.replace('Fulano', 'Fulana'), 'crc_mismatch', 'tampered value');
    rejects(factsBody.slice(0, -4), 'crc_field', 'no 63');
    rejects(`${factsBody}ZZZZ`, 'crc_field', 'non-hex crc');
    rejects(`${factsBody.slice(0, -4)}63051D3D0`, 'crc_field', 'crc length 5');
    rejects(factsBody.slice(0, -4).replace('5802BR', '63041D3D5802BR'), 'crc_field', '63 not last');
    rejects(`${factsBody}1D3`, 'truncated', 'crc truncated');
  });

  test('TLV structure', () => {
    rejects(factsPayload.slice(0, 50), 'truncated', 'cut mid-value');
    rejects(withCrc(factsBody.replace('5913Fulano de Tal', '5999Fulano de Tal')), 'truncated', 'declared length past end');
    rejects(withCrc(factsBody.replace('5913Fulano de Tal', '59AFulano de Tal')), 'malformed_tlv', 'non-numeric length');
    rejects(withCrc(factsBody.replace('5913Fulano de Tal', '5913Fulano de Tal' + 'X')), 'malformed_tlv', 'stray character');
    rejects(withCrc(factsBody.replace('5913', '5A13')), 'malformed_tlv', 'non-numeric ID');
    rejects(withCrc(factsBody.replace('5913Fulano de Tal', '5900' + '5913Fulano de Tal')), 'malformed_tlv', 'zero length');
    rejects(withCrc(factsBody.replace('5802BR', '5802BR5802BR')), 'duplicate_field', 'duplicate 58');
    rejects(withCrc(factsBody.replace('5913Fulano de Tal', '5913Fulano de Tal5903Tal')), 'duplicate_field', 'duplicate 59');
    rejects(withCrc(factsBody.replace('62070503***', '620705X3***')), 'malformed_tlv', 'template child length not digits');
    rejects(withCrc(factsBody.replace('62070503***', '62030503')), 'truncated', 'template child header only');
    rejects(withCrc(factsBody.replace('62070503***', '62140503***0503***')), 'duplicate_field', 'duplicate inside template');
    rejects(withCrc(factsBody.replace('62070503***', '62060503**')), 'truncated', 'template child past end');
    rejects(withCrc(factsBody.replace('Fulano de Tal', 'Fulano\nde Tal')), 'invalid_character', 'newline');
    rejects(withCrc(factsBody.replace('Fulano de Tal', 'Fulano\u0000de Tal')), 'invalid_character', 'NUL');
    rejects(withCrc(factsBody.replace('Fulano de Tal', 'Fulano\ud800de Tal')), 'invalid_character', 'lone surrogate');
  });

  test('payload format indicator', () => {
    rejects(withCrc(factsBody.replace('000201', '000202')), 'payload_format', '00 = 02');
    rejects(withCrc(factsBody.slice(6)), 'payload_format', 'no 00');
    rejects(withCrc(factsBody.slice(6).replace('5802BR', '5802BR000201')), 'payload_format', '00 not first');
  });

  test('mandatory fields', () => {
    const present = ['52040000', '5303986', '5802BR', '5913Fulano de Tal', '6008BRASILIA'];
    for (const field of present) {
      rejects(withCrc(factsBody.replace(field, '')), 'missing_field', `without ${field.slice(0, 2)}`);
    }
  });

  test('field values', () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ['52040000', '5204ABCD', 'category not digits'],
      ['5303986', '5303840', 'currency USD'],
      ['5802BR', '5802AR', 'country AR'],
      ['5913Fulano de Tal', `5926${'N'.repeat(26)}`, 'name of 26'],
      ['6008BRASILIA', `6016${'C'.repeat(16)}`, 'city of 16'],
      ['6008BRASILIA', `6008BRASILIA6111${'1'.repeat(11)}`, 'postal code of 11'],
      ['000201', '000201010213', 'point of initiation 13'],
      ['62070503***', '62090505AB-12', 'txid with a hyphen'],
      ['62070503***', `62300526${'A'.repeat(26)}`, 'txid of 26'],
      ['0136123e4567-e12b-12d1-a456-426655440000', '011152998224724', 'CPF key with bad check digits'],
    ];
    for (const [from, to, name] of cases) {
      const body = factsBody.replace(from, to);
      const fixed = from.startsWith('0136') ? body.replace('2658', `26${String(18 + to.length).padStart(2, '0')}`) : body;
      rejects(withCrc(fixed), 'invalid_field', name);
    }
    for (const amount of ['12.345', '1,00', '0.00', '0', '.50', '5.', '-1.00', '+1.00', '1e3', '123456789012.5']) {
      const field = `54${String(amount.length).padStart(2, '0')}${amount}`;
      rejects(withCrc(factsBody.replace('5802BR', `${field}5802BR`)), 'invalid_field', `amount ${amount}`);
    }
    for (const amount of ['1', '0.01', '10.5', '1234567890.12']) {
      const field = `54${String(amount.length).padStart(2, '0')}${amount}`;
      assert.equal(decodeOk(withCrc(factsBody.replace('5802BR', `${field}5802BR`))).amount, amount);
    }
  });

  test('PIX merchant account', () => {
    rejects(withCrc(factsBody.replace('br.gov.bcb.pix', 'br.gov.bcb.pax')), 'no_pix_account', 'wrong GUI');
    rejects(withCrc(factsBody.replace('26580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-426655440000', '')), 'no_pix_account', 'no 26');
    const account = '0014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-426655440000';
    rejects(withCrc(factsBody.replace('5204', `2758${account}5204`)), 'invalid_field', 'two PIX accounts');
    const both = `0014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400002505a.b/c`;
    rejects(withCrc(factsBody.replace(`2658${account}`, `26${both.length}${both}`)), 'invalid_field', 'key and URL');
    const neither = '0014br.gov.bcb.pix0205hello';
    rejects(withCrc(factsBody.replace(`2658${account}`, `26${neither.length}${neither}`)), 'invalid_field', 'neither key nor URL');
    const spaced = '0014br.gov.bcb.pix2507a.b/c d';
    rejects(withCrc(factsBody.replace(`2658${account}`, `26${spaced.length}${spaced}`)), 'invalid_field', 'URL with a space');
  });
});

describe('encoding', () => {
  const base = { merchantName: 'Fulano de Tal', merchantCity: 'BRASILIA' } as const;

  test('writes the normal form of the key, NFC text, and the txid', () => {
    const encoded = encodeBrCode({
      ...base,
      key: '529.982.247-25',
      merchantName: 'Jose\u0301 Conceic\u0327a\u0303o',
      merchantCity: '  Sa\u0303o Paulo ',
      amount: '1500.5',
      txid: 'Pedido42',
      description: 'Cafe',
    });
    assert.ok(encoded.ok);
    const decoded = decodeOk(encoded.payload);
    assert.equal(decoded.merchantAccount.key, '52998224725');
    assert.equal(decoded.merchantName, 'José Conceição');
    assert.equal(decoded.merchantCity, 'São Paulo');
    assert.equal(decoded.txid, 'Pedido42');
    assert.equal(decoded.merchantAccount.description, 'Cafe');
    assert.equal(decoded.pointOfInitiation, undefined);
    assert.equal(encoded.payload.slice(-4), referenceCrc(encoded.payload.slice(0, -4)));
  });

  test('a 25-character accented name and a 15-character accented city fit', () => {
    const encoded = encodeBrCode({ ...base, key: 'fulano@example.com', merchantName: 'ÁÉÍÓÚ'.repeat(5), merchantCity: 'ãõç'.repeat(5) });
    assert.ok(encoded.ok);
    assert.equal(decodeOk(encoded.payload).merchantName, 'ÁÉÍÓÚ'.repeat(5));
  });

  test('single use can be set either way', () => {
    const staticSingle = encodeBrCode({ ...base, key: '+5511912345678', singleUse: true });
    assert.ok(staticSingle.ok);
    assert.equal(decodeOk(staticSingle.payload).pointOfInitiation, 'single_use');
    const dynamicReusable = encodeBrCode({ ...base, url: 'pix.example.com/v2/abc', singleUse: false });
    assert.ok(dynamicReusable.ok);
    assert.equal(decodeOk(dynamicReusable.payload).pointOfInitiation, undefined);
  });

  test('rejections', () => {
    const evp = '123e4567-e12b-12d1-a456-426655440000';
    const cases: ReadonlyArray<readonly [BrCodeEncodeInput, string]> = [
      [{ ...base, key: '52998224724' }, 'invalid_account'],
      [{ ...base, key: '' }, 'invalid_account'],
      [{ ...base, url: 'https://pix.example.com/v2/abc' }, 'invalid_account'],
      [{ ...base, url: 'pix.example.com/v2/a b' }, 'invalid_account'],
      [{ ...base, url: `pix.example.com/${'a'.repeat(62)}` }, 'invalid_account'],
      [{ ...base, key: evp, url: 'pix.example.com/v2/abc' } as unknown as BrCodeEncodeInput, 'invalid_account'],
      [{ ...base } as unknown as BrCodeEncodeInput, 'invalid_account'],
      [{ ...base, key: evp, amount: '0' }, 'invalid_amount'],
      [{ ...base, key: evp, amount: '10.001' }, 'invalid_amount'],
      [{ ...base, key: evp, amount: '10,00' }, 'invalid_amount'],
      [{ ...base, key: evp, amount: '12345678901.00' }, 'invalid_amount'],
      [{ ...base, key: evp, merchantName: '' }, 'invalid_name'],
      [{ ...base, key: evp, merchantName: '   ' }, 'invalid_name'],
      [{ ...base, key: evp, merchantName: 'N'.repeat(26) }, 'invalid_name'],
      [{ ...base, key: evp, merchantName: 'Tab\there' }, 'invalid_name'],
      [{ ...base, key: evp, merchantCity: 'C'.repeat(16) }, 'invalid_city'],
      [{ ...base, key: evp, txid: 'with-hyphen' }, 'invalid_txid'],
      [{ ...base, key: evp, txid: 'A'.repeat(26) }, 'invalid_txid'],
      [{ ...base, key: evp, txid: '***' }, 'invalid_txid'],
      [{ ...base, url: 'pix.example.com/v2/abc', txid: 'ABC' }, 'invalid_txid'],
      [{ ...base, url: 'pix.example.com/v2/abc', description: 'x' }, 'invalid_description'],
      [{ ...base, key: evp, description: 'x'.repeat(38) }, 'invalid_description'],
      [{ ...base, key: evp, description: 'bad\u0007bell' }, 'invalid_description'],
      [{ ...base, key: evp, merchantCategoryCode: '12' }, 'invalid_category'],
      [{ ...base, key: evp, postalCode: '12345678901' }, 'invalid_postal_code'],
    ];
    for (const [input, code] of cases) {
      const result = encodeBrCode(input);
      assert.equal(result.ok, false, JSON.stringify(input));
      if (!result.ok) assert.equal(result.code, code, JSON.stringify(input));
    }
    // 37 characters of description is the most a 36-character key leaves in field 26.
    assert.equal(encodeBrCode({ ...base, key: evp, description: 'x'.repeat(37) }).ok, true);
  });
});

describe('seeded random round trips', () => {
  const nameAlphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .-&áàâãéêíóôõúüçÁÂÃÉÊÍÓÔÕÚÇ';
  const alphanumeric = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

  function picker(random: () => number) {
    const integer = (low: number, high: number): number => low + Math.floor(random() * (high - low + 1));
    const fromAlphabet = (alphabet: string, length: number): string => {
      const characters = Array.from(alphabet);
      let text = '';
      for (let index = 0; index < length; index += 1) text += characters[integer(0, characters.length - 1)];
      return text;
    };
    const digits = (length: number): string => fromAlphabet('0123456789', length);
    // Text without leading/trailing spaces (the encoder trims), 1..max characters.
    const text = (lengthMax: number): string => {
      const length = integer(1, lengthMax);
      const edge = (): string => fromAlphabet(nameAlphabet.replace(' ', ''), 1);
      return length === 1 ? edge() : edge() + fromAlphabet(nameAlphabet, length - 2) + edge();
    };
    return { integer, fromAlphabet, digits, text };
  }

  function cpf(base: string): string {
    const digit = (text: string): number => {
      let sum = 0;
      for (let index = 0; index < text.length; index += 1) sum += Number(text[index]) * (text.length + 1 - index);
      return ((sum * 10) % 11) % 10;
    };
    const first = digit(base);
    return `${base}${first}${digit(base + String(first))}`;
  }

  test('encode → decode returns every field, 2000 seeded cases', () => {
    const random = mulberry32(986);
    const pick = picker(random);
    for (let round = 0; round < 2000; round += 1) {
      const kind = pick.integer(0, 4);
      let key: string | undefined;
      let url: string | undefined;
      let expectedKey: string | undefined;
      if (kind === 0) {
        expectedKey = cpf(`1${pick.digits(8)}`);
        key = `${expectedKey.slice(0, 3)}.${expectedKey.slice(3, 6)}.${expectedKey.slice(6, 9)}-${expectedKey.slice(9)}`;
      } else if (kind === 1) {
        key = `${pick.fromAlphabet(alphanumeric, pick.integer(1, 30))}@example.com`;
        expectedKey = key.toLowerCase();
      } else if (kind === 2) {
        key = `+55${pick.integer(11, 99).toString().replace('0', '1')}9${pick.digits(8)}`;
        expectedKey = key;
      } else if (kind === 3) {
        const hex = pick.fromAlphabet('0123456789ABCDEF', 32);
        key = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
        expectedKey = key.toLowerCase();
      } else {
        url = `pix.example.com.br/v2/${pick.fromAlphabet(alphanumeric, pick.integer(1, 50))}`;
      }
      const amount =
        random() < 0.3
          ? undefined
          : `${pick.integer(1, 9)}${pick.digits(pick.integer(0, 9))}${random() < 0.5 ? '' : `.${pick.digits(pick.integer(1, 2))}`}`;
      const merchantName = pick.text(25);
      const merchantCity = pick.text(15);
      const txid = url === undefined && random() < 0.5 ? pick.fromAlphabet(alphanumeric, pick.integer(1, 25)) : undefined;
      const postalCode = random() < 0.3 ? pick.digits(8) : undefined;
      const descriptionBudget = expectedKey === undefined ? 0 : 99 - 18 - 4 - expectedKey.length - 4;
      const description =
        descriptionBudget >= 1 && random() < 0.4 ? pick.text(Math.min(descriptionBudget, 40)) : undefined;

      const common = {
        merchantName,
        merchantCity,
        ...(amount === undefined ? {} : { amount }),
        ...(txid === undefined ? {} : { txid }),
        ...(postalCode === undefined ? {} : { postalCode }),
        ...(description === undefined ? {} : { description }),
      };
      const input: BrCodeEncodeInput = url === undefined ? { ...common, key: key ?? '' } : { ...common, url };
      const encoded = encodeBrCode(input);
      if (!encoded.ok) assert.fail(`round ${round}: ${encoded.code} ${encoded.reason} for ${JSON.stringify(input)}`);
      assert.equal(encoded.payload.slice(-4), referenceCrc(encoded.payload.slice(0, -4)), `round ${round} crc`);
      assert.ok(Array.from(encoded.payload).length <= brCodeLengthMax);

      const decoded = decodeOk(encoded.payload);
      assert.equal(decoded.kind, url === undefined ? 'static' : 'dynamic');
      assert.equal(decoded.merchantAccount.key, expectedKey);
      assert.equal(decoded.merchantAccount.url, url);
      assert.equal(decoded.merchantAccount.description, description);
      assert.equal(decoded.amount, amount);
      assert.equal(decoded.merchantName, merchantName);
      assert.equal(decoded.merchantCity, merchantCity);
      assert.equal(decoded.txid, txid);
      assert.equal(decoded.postalCode, postalCode);

      const response = toDecoderResponse(decoded);
      assert.equal(response.account, expectedKey ?? url);
      assert.equal(response.amount, amount);
      assert.equal(response.currency, 'BRL');
      assert.equal(response.name, merchantName);
      assert.equal(response.taxId, kind === 0 ? expectedKey : undefined);
      assert.equal(Object.values(response).every((value) => typeof value === 'string'), true);

      // Flipping any one character of the payload is always rejected.
      const position = pick.integer(0, encoded.payload.length - 1);
      const original = encoded.payload[position] ?? '';
      const replacement = original === '7' ? '8' : '7';
      const mutated = encoded.payload.slice(0, position) + replacement + encoded.payload.slice(position + 1);
      assert.equal(decodeBrCode(mutated).ok, false, `round ${round}: mutation at ${position}`);
    }
  });
});
