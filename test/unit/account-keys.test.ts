// PIX and Bre-B key classification: valid and invalid examples of every kind, and seeded random
// CPF/CNPJ whose check digits are computed here independently of the implementation.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyPixKey, cnpjDigitsValid, cpfDigitsValid } from '../../src/rails/pix-keys.ts';
import { classifyBrebKey } from '../../src/rails/breb-keys.ts';

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

function randomDigits(random: () => number, count: number): string {
  let text = '';
  for (let index = 0; index < count; index += 1) text += String(Math.floor(random() * 10));
  return text;
}

// Independent formulation: CPF digit = (Σ dᵢ·wᵢ · 10 mod 11) mod 10, weights counting down to 2.
function cpfCheck(base: string): string {
  const digit = (text: string): number => {
    let sum = 0;
    for (let index = 0; index < text.length; index += 1) sum += Number(text[index]) * (text.length + 1 - index);
    return ((sum * 10) % 11) % 10;
  };
  const first = digit(base);
  return `${base}${first}${digit(base + String(first))}`;
}

// Independent formulation: CNPJ weights are 2..9 repeating from the right.
function cnpjCheck(base: string): string {
  const digit = (text: string): number => {
    let sum = 0;
    for (let fromRight = 0; fromRight < text.length; fromRight += 1) {
      sum += Number(text[text.length - 1 - fromRight]) * (2 + (fromRight % 8));
    }
    const remainder = sum % 11;
    return remainder < 2 ? 0 : 11 - remainder;
  };
  const first = digit(base);
  return `${base}${first}${digit(base + String(first))}`;
}

function flipLastDigit(digits: string): string {
  const last = Number(digits[digits.length - 1]);
  return digits.slice(0, -1) + String((last + 1) % 10);
}

describe('PIX keys', () => {
  test('the reference helpers agree with well-known valid documents', () => {
    assert.equal(cpfCheck('529982247'), '52998224725');
    assert.equal(cnpjCheck('112223330001'), '11222333000181');
  });

  test('valid keys of every type, normalised', () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ['52998224725', 'cpf', '52998224725'],
      ['529.982.247-25', 'cpf', '52998224725'],
      ['  529.982.247-25 ', 'cpf', '52998224725'],
      ['11222333000181', 'cnpj', '11222333000181'],
      ['11.222.333/0001-81', 'cnpj', '11222333000181'],
      ['fulano@example.com', 'email', 'fulano@example.com'],
      ['Fulano.Tal+pix@Example.COM.br', 'email', 'fulano.tal+pix@example.com.br'],
      ['+5511912345678', 'phone', '+5511912345678'],
      ['+55 (11) 91234-5678', 'phone', '+5511912345678'],
      ['+556133334444', 'phone', '+556133334444'],
      ['123e4567-e12b-12d1-a456-426655440000', 'evp', '123e4567-e12b-12d1-a456-426655440000'],
      ['7D9F0335-8DCC-4054-9BF9-0DBD61D36906', 'evp', '7d9f0335-8dcc-4054-9bf9-0dbd61d36906'],
    ];
    for (const [input, type, normalized] of cases) {
      assert.deepEqual(classifyPixKey(input), { ok: true, type, normalized }, input);
    }
  });

  test('an e-mail of exactly 77 characters is accepted, 78 is not', () => {
    const domain = '@pagamentos.example.com.br';
    const local = 'a'.repeat(77 - domain.length);
    assert.equal((local + domain).length, 77);
    assert.equal(classifyPixKey(local + domain).ok, true);
    assert.equal(classifyPixKey(`a${local}${domain}`).ok, false);
  });

  test('invalid keys are rejected with a code', () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [undefined, 'not_a_string'],
      [52998224725, 'not_a_string'],
      ['', 'empty'],
      ['   ', 'empty'],
      ['x'.repeat(200), 'too_long'],
      ['52998224724', 'invalid_cpf'],
      ['529.982.247-24', 'invalid_cpf'],
      ['11111111111', 'invalid_cpf'],
      ['00000000000', 'invalid_cpf'],
      ['11222333000182', 'invalid_cnpj'],
      ['11.222.333/0001-80', 'invalid_cnpj'],
      ['22222222222222', 'invalid_cnpj'],
      ['529.982.24725', 'unrecognised'],
      ['1234567890', 'unrecognised'],
      ['fulano@', 'invalid_email'],
      ['@example.com', 'invalid_email'],
      ['fulano@example', 'invalid_email'],
      ['ful..ano@example.com', 'invalid_email'],
      ['.fulano@example.com', 'invalid_email'],
      ['fulano@exa_mple.com', 'invalid_email'],
      ['fulano@-example.com', 'invalid_email'],
      ['fu lano@example.com', 'invalid_email'],
      ['a@b@example.com', 'invalid_email'],
      ['fulano@example.c0m', 'invalid_email'],
      [`${'a'.repeat(66)}@example.com`, 'invalid_email'],
      ['+55119123456', 'invalid_phone'],
      ['+551191234567899', 'invalid_phone'],
      ['+5411912345678', 'invalid_phone'],
      ['+5501912345678', 'invalid_phone'],
      ['+5511812345678', 'invalid_phone'],
      ['+55 11 9123a-5678', 'invalid_phone'],
      ['123e4567-e12b-12d1-a456-42665544000', 'unrecognised'],
      ['123e4567e12b12d1a456426655440000', 'unrecognised'],
      ['g23e4567-e12b-12d1-a456-426655440000', 'unrecognised'],
      ['hello', 'unrecognised'],
    ];
    for (const [input, code] of cases) {
      const result = classifyPixKey(input);
      assert.equal(result.ok, false, String(input));
      if (!result.ok) {
        assert.equal(result.code, code, String(input));
        assert.ok(result.reason.length > 0);
      }
    }
  });

  test('seeded random CPFs and CNPJs: right check digits pass, a wrong one fails', () => {
    const random = mulberry32(20251006);
    for (let round = 0; round < 500; round += 1) {
      const cpf = cpfCheck(randomDigits(random, 9));
      const cnpj = cnpjCheck(randomDigits(random, 12));
      const cpfSame = /^(\d)\1+$/.test(cpf);
      const cnpjSame = /^(\d)\1+$/.test(cnpj);
      assert.equal(cpfDigitsValid(cpf), !cpfSame, cpf);
      assert.equal(cnpjDigitsValid(cnpj), !cnpjSame, cnpj);
      assert.equal(cpfDigitsValid(flipLastDigit(cpf)), false, cpf);
      assert.equal(cnpjDigitsValid(flipLastDigit(cnpj)), false, cnpj);
      if (!cpfSame) {
        const formatted = `${cpf.slice(0, 3)}.${cpf.slice(3, 6)}.${cpf.slice(6, 9)}-${cpf.slice(9)}`;
        assert.deepEqual(classifyPixKey(formatted), { ok: true, type: 'cpf', normalized: cpf });
      }
      if (!cnpjSame) {
        const formatted = `${cnpj.slice(0, 2)}.${cnpj.slice(2, 5)}.${cnpj.slice(5, 8)}/${cnpj.slice(8, 12)}-${cnpj.slice(12)}`;
        assert.deepEqual(classifyPixKey(formatted), { ok: true, type: 'cnpj', normalized: cnpj });
      }
    }
  });
});

describe('Bre-B keys', () => {
  test('valid keys of every type, normalised', () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ['1020304050', 'document', '1020304050'],
      ['1.020.304.050', 'document', '1020304050'],
      ['123456', 'document', '123456'],
      ['52.345.678', 'document', '52345678'],
      ['9001234567', 'document', '9001234567'],
      ['3001234567', 'mobile', '3001234567'],
      ['300 123 4567', 'mobile', '3001234567'],
      ['+573001234567', 'mobile', '3001234567'],
      ['+57 300 123 4567', 'mobile', '3001234567'],
      ['+57-300-123-4567', 'mobile', '3001234567'],
      ['pago@ejemplo.com.co', 'email', 'pago@ejemplo.com.co'],
      ['Pago@Ejemplo.CO', 'email', 'pago@ejemplo.co'],
      ['@tienda', 'alphanumeric', '@tienda'],
      ['@Tienda.La_14-b', 'alphanumeric', '@Tienda.La_14-b'],
      [`@${'a'.repeat(20)}`, 'alphanumeric', `@${'a'.repeat(20)}`],
      ['@abc', 'alphanumeric', '@abc'],
      ['0012345678', 'merchant_code', '0012345678'],
      [' 0098765432 ', 'merchant_code', '0098765432'],
    ];
    for (const [input, type, normalized] of cases) {
      assert.deepEqual(classifyBrebKey(input), { ok: true, type, normalized }, input);
    }
  });

  test('invalid keys are rejected with a code', () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [3001234567, 'not_a_string'],
      [null, 'not_a_string'],
      ['', 'empty'],
      ['\t', 'empty'],
      ['1'.repeat(301), 'too_long'],
      ['12345', 'invalid_document'],
      ['12345678901', 'invalid_document'],
      ['0123456', 'invalid_document'],
      ['001234567', 'invalid_merchant_code'],
      ['00123456789', 'invalid_merchant_code'],
      ['+573001234', 'invalid_mobile'],
      ['+5730012345678', 'invalid_mobile'],
      ['+571234567890', 'invalid_mobile'],
      ['+5511912345678', 'invalid_mobile'],
      ['+57 300 123 456a', 'invalid_mobile'],
      ['@ab', 'invalid_alphanumeric'],
      [`@${'a'.repeat(21)}`, 'invalid_alphanumeric'],
      ['@tienda la 14', 'invalid_alphanumeric'],
      ['@tiénda', 'invalid_alphanumeric'],
      ['@', 'invalid_alphanumeric'],
      ['pago@ejemplo', 'invalid_email'],
      ['pago@@ejemplo.co', 'invalid_email'],
      ['1..234.567', 'unrecognised'],
      ['1.234.567.', 'unrecognised'],
      ['tienda', 'unrecognised'],
    ];
    for (const [input, code] of cases) {
      const result = classifyBrebKey(input);
      assert.equal(result.ok, false, String(input));
      if (!result.ok) {
        assert.equal(result.code, code, String(input));
        assert.ok(result.reason.length > 0);
      }
    }
  });

  test('the numeric kinds never overlap: every 10-digit string has exactly one reading', () => {
    const random = mulberry32(57);
    for (let round = 0; round < 2000; round += 1) {
      const digits = randomDigits(random, 10);
      const result = classifyBrebKey(digits);
      const expected = digits.startsWith('3')
        ? 'mobile'
        : digits.startsWith('00')
          ? 'merchant_code'
          : digits.startsWith('0')
            ? undefined
            : 'document';
      assert.equal(result.ok ? result.type : undefined, expected, digits);
    }
  });
});
