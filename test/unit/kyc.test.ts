// The KYC record: the spec's one transition (null → APPROVED on a complete, valid submission),
// every field rule, resubmission, operator rejection, and the status view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideKyc,
  documentTypes,
  evolveKyc,
  isEmail,
  isPhone,
  kycFieldLengthMax,
  kycStatuses,
  kycStatusView,
  parseIsoDate,
  utcDayOf,
  validateKycSubmission,
} from '../../src/domain/kyc.ts';
import type { KycCommand, KycField, KycFieldErrorReason, KycState, KycStatus, KycSubmissionInput } from '../../src/domain/kyc.ts';

const nowMs = Date.UTC(2025, 5, 15, 12, 0, 0); // 2025-06-15T12:00Z

const valid: KycSubmissionInput = {
  fullName: 'Ana María Pérez',
  documentType: 'NATIONAL_ID',
  documentNumber: '1.234.567-8',
  dateOfBirth: '1990-02-28',
  nationality: 'Colombian',
  city: 'Bogotá',
  address: 'Calle 100 # 10-20',
  email: 'ana.perez+kyc@example.co',
  phone: '+57 (300) 123-4567',
  documentRef: 'kyc/acme/user-1/doc-1',
};

const submit = (submission: KycSubmissionInput = valid): KycCommand => ({ kind: 'Submit', partnerId: 'acme', userId: 'user-1', submission });

function apply(state: KycState | null, command: KycCommand, at = nowMs): KycState | null {
  const decision = decideKyc(state, command, { nowMs: at });
  if (!decision.ok) throw new Error(JSON.stringify(decision.rejection));
  let current = state;
  for (const event of decision.events) current = evolveKyc(current, event);
  return current;
}

function errorsOf(submission: KycSubmissionInput, at = nowMs): [KycField, KycFieldErrorReason][] {
  const decision = decideKyc(null, submit(submission), { nowMs: at });
  assert.ok(!decision.ok);
  assert.equal(decision.rejection.code, 'invalid_submission');
  assert.ok(decision.rejection.code === 'invalid_submission');
  for (const error of decision.rejection.errors) assert.ok(error.message.length > 0);
  return decision.rejection.errors.map((error) => [error.field, error.reason]);
}

/** A record in the given status, including the ones only carried over from elsewhere. */
function inStatus(status: KycStatus): KycState {
  const approved = apply(null, submit());
  assert.ok(approved);
  switch (status) {
    case 'APPROVED': return approved;
    case 'REJECTED': return apply(approved, { kind: 'Reject', reason: 'forged document' }) ?? approved;
    case 'PENDING':
    case 'PENDING_APPROVAL': return { ...approved, status, decidedAtMs: null };
  }
}

test('null → APPROVED at once on a complete, valid submission; values are trimmed', () => {
  const decision = decideKyc(null, submit({ ...valid, fullName: '  Ana María Pérez  ' }), { nowMs });
  assert.ok(decision.ok);
  assert.deepEqual(decision.events.map((e) => e.type), ['Approved']);
  const state = apply(null, submit({ ...valid, fullName: '  Ana María Pérez  ' }));
  assert.ok(state);
  assert.equal(state.status, 'APPROVED');
  assert.equal(state.submission.fullName, 'Ana María Pérez');
  assert.equal(state.submission.documentType, 'NATIONAL_ID');
  assert.equal(state.decidedAtMs, nowMs);
  assert.deepEqual(kycStatusView(state), { hasApproved: true, status: 'APPROVED' });
});

test('status view: never submitted is { hasApproved: false, status: null }; every status is representable', () => {
  assert.deepEqual(kycStatusView(null), { hasApproved: false, status: null });
  for (const status of kycStatuses) {
    assert.deepEqual(kycStatusView(inStatus(status)), { hasApproved: status === 'APPROVED', status });
  }
});

test('every document type is accepted; anything else is invalid_value', () => {
  for (const documentType of documentTypes) assert.ok(apply(null, submit({ ...valid, documentType })));
  assert.deepEqual(errorsOf({ ...valid, documentType: 'passport' }), [['documentType', 'invalid_value']]);
  assert.deepEqual(errorsOf({ ...valid, documentType: 'VISA' }), [['documentType', 'invalid_value']]);
});

test('every missing or blank field is reported, all at once, in form order', () => {
  assert.deepEqual(errorsOf({}), [
    ['document', 'missing'], ['fullName', 'missing'], ['documentType', 'missing'], ['documentNumber', 'missing'],
    ['dateOfBirth', 'missing'], ['nationality', 'missing'], ['city', 'missing'], ['address', 'missing'],
    ['email', 'missing'], ['phone', 'missing'],
  ]);
  for (const field of Object.keys(valid) as (keyof KycSubmissionInput)[]) {
    const reported = field === 'documentRef' ? 'document' : field;
    assert.deepEqual(errorsOf({ ...valid, [field]: '   ' }), [[reported, 'missing']], field);
  }
});

test('maximum lengths (code points, after trimming) and control characters', () => {
  for (const [field, max] of Object.entries(kycFieldLengthMax) as [keyof typeof kycFieldLengthMax, number][]) {
    if (field === 'email' || field === 'phone') continue; // format rules, below
    const reported = field === 'documentRef' ? 'document' : field;
    assert.ok(validateKycSubmission({ ...valid, [field]: 'é'.repeat(max) }, nowMs).ok, `${field} at max`);
    assert.deepEqual(errorsOf({ ...valid, [field]: 'é'.repeat(max + 1) }), [[reported, 'too_long']], field);
    assert.deepEqual(errorsOf({ ...valid, [field]: 'a\u0000b' }), [[reported, 'invalid_characters']], field);
  }
  assert.deepEqual(errorsOf({ ...valid, address: 'line 1\nline 2' }), [['address', 'invalid_characters']]);
  const longEmail = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`;
  assert.deepEqual(errorsOf({ ...valid, email: longEmail }), [['email', 'too_long']]);
});

test('dateOfBirth: YYYY-MM-DD (or an ISO date-time, read as its date), a real day, from 1900-01-01, strictly before today (UTC)', () => {
  const ok = ['1990-02-28', '2000-02-29', '1900-01-01', '2025-06-14'];
  for (const dateOfBirth of ok) assert.ok(validateKycSubmission({ ...valid, dateOfBirth }, nowMs).ok, dateOfBirth);
  for (const dateOfBirth of ['1990-02-28T00:00:00Z', '1990-02-28T23:30:00.123-05:00', '1990-02-28T12:00+02:00']) {
    const checked = validateKycSubmission({ ...valid, dateOfBirth }, nowMs);
    assert.ok(checked.ok, dateOfBirth);
    assert.equal(checked.ok ? checked.value.dateOfBirth : null, '1990-02-28', 'the calendar date as written, no time zone shift');
  }
  const badFormat = ['1990-2-28', '28/02/1990', '02/28/1990', '19900228', '1990-02-30', '2023-02-29', '1990-02-28T25',
    '1990-02-28 00:00:00', '1990-02-30T00:00:00Z', '1900-02-29', '1990-13-01', '1990-00-10', '1990-01-00', 'yesterday', '+01990-01-01'];
  for (const dateOfBirth of badFormat) assert.deepEqual(errorsOf({ ...valid, dateOfBirth }), [['dateOfBirth', 'invalid_format']], dateOfBirth);
  assert.deepEqual(errorsOf({ ...valid, dateOfBirth: '1899-12-31' }), [['dateOfBirth', 'invalid_value']]);
  for (const dateOfBirth of ['2025-06-15', '2025-06-16', '2999-01-01']) {
    assert.deepEqual(errorsOf({ ...valid, dateOfBirth }), [['dateOfBirth', 'not_in_past']], dateOfBirth);
  }
  // "Today" follows nowMs, never the machine clock: the same date is past one day later.
  assert.ok(validateKycSubmission({ ...valid, dateOfBirth: '2025-06-15' }, nowMs + 86_400_000).ok);
});

test('parseIsoDate and utcDayOf agree with Date.UTC over a wide range', () => {
  for (let year = 1900; year <= 2100; year += 1) {
    for (const [month, day] of [[1, 1], [2, 28], [3, 1], [12, 31]] as const) {
      const text = `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
      assert.equal(parseIsoDate(text), Date.UTC(year, month - 1, day) / 86_400_000, text);
    }
    assert.equal(parseIsoDate(`${year}-02-29`) !== null, (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0);
  }
  assert.equal(utcDayOf(Date.UTC(2025, 5, 15, 23, 59, 59, 999)), Date.UTC(2025, 5, 15) / 86_400_000);
});

test('email validity', () => {
  for (const email of ['a@b.co', 'first.last@sub.example.com', "o'brien+tag@example.org", 'x@xn--80ak6aa92e.com', 'USER@EXAMPLE.COM']) {
    assert.ok(isEmail(email), email);
  }
  for (const email of ['plain', '@example.com', 'a@', 'a@b', 'a@@b.com', 'a@b@c.com', '.a@b.com', 'a.@b.com', 'a..b@c.com',
    'a b@c.com', 'a@-b.com', 'a@b-.com', 'a@b..com', 'a@1.2.3.4', 'a@[1.2.3.4]', '"a"@b.com', 'ñ@b.com', `${'a'.repeat(65)}@b.com`]) {
    assert.ok(!isEmail(email), email);
  }
  assert.deepEqual(errorsOf({ ...valid, email: 'not-an-email' }), [['email', 'invalid_format']]);
});

test('phone validity: 7–15 digits, optional +, usual separators', () => {
  for (const phone of ['+5511987654321', '300 123 4567', '(11) 98765-4321', '+57.300.123.4567', '1234567']) assert.ok(isPhone(phone), phone);
  for (const phone of ['123456', '+1234567890123456', 'call me', '+57 300 ABC 4567', '++573001234567', '57+3001234567']) {
    assert.ok(!isPhone(phone), phone);
  }
  assert.deepEqual(errorsOf({ ...valid, phone: '12-34' }), [['phone', 'invalid_format']]);
});

test('resubmission when APPROVED: validated, then a no-op that keeps the approved record', () => {
  const approved = inStatus('APPROVED');
  const decision = decideKyc(approved, submit({ ...valid, city: 'Medellín', documentRef: 'kyc/acme/user-1/doc-2' }), { nowMs: nowMs + 1000 });
  assert.deepEqual(decision, { ok: true, events: [] });
  const invalid = decideKyc(approved, submit({ ...valid, email: 'nope' }), { nowMs: nowMs + 1000 });
  assert.ok(!invalid.ok && invalid.rejection.code === 'invalid_submission');
});

test('submission after REJECTED is refused (previously_rejected), even when valid', () => {
  const rejected = inStatus('REJECTED');
  assert.equal(rejected.status, 'REJECTED');
  assert.equal(rejected.rejectionReason, 'forged document');
  assert.deepEqual(kycStatusView(rejected), { hasApproved: false, status: 'REJECTED' });
  assert.deepEqual(decideKyc(rejected, submit(), { nowMs }), { ok: false, rejection: { code: 'previously_rejected' } });
});

test('a carried-over PENDING or PENDING_APPROVAL record is approved by a valid submission', () => {
  for (const status of ['PENDING', 'PENDING_APPROVAL'] as const) {
    const state = apply(inStatus(status), submit({ ...valid, documentRef: 'kyc/new' }), nowMs + 5);
    assert.equal(state?.status, 'APPROVED');
    assert.equal(state?.submission.documentRef, 'kyc/new');
    assert.equal(state?.decidedAtMs, nowMs + 5);
  }
});

test('Reject (operations): from every non-rejected status; again is a no-op; without a record not_found', () => {
  for (const status of ['APPROVED', 'PENDING', 'PENDING_APPROVAL'] as const) {
    const state = apply(inStatus(status), { kind: 'Reject', reason: ' fraud ' });
    assert.equal(state?.status, 'REJECTED');
    assert.equal(state?.rejectionReason, 'fraud');
  }
  assert.deepEqual(decideKyc(inStatus('REJECTED'), { kind: 'Reject', reason: 'again' }, { nowMs }), { ok: true, events: [] });
  assert.deepEqual(decideKyc(null, { kind: 'Reject', reason: 'x' }, { nowMs }), { ok: false, rejection: { code: 'not_found', command: 'Reject' } });
  assert.throws(() => decideKyc(inStatus('APPROVED'), { kind: 'Reject', reason: '  ' }, { nowMs }), /invariant/);
});

test('every status × command kind: the documented outcome or a typed rejection', () => {
  const outcomes: Record<KycStatus | 'null', Record<KycCommand['kind'], string>> = {
    null: { Submit: 'APPROVED', Reject: 'not_found' },
    PENDING: { Submit: 'APPROVED', Reject: 'REJECTED' },
    PENDING_APPROVAL: { Submit: 'APPROVED', Reject: 'REJECTED' },
    APPROVED: { Submit: 'no-op', Reject: 'REJECTED' },
    REJECTED: { Submit: 'previously_rejected', Reject: 'no-op' },
  };
  for (const [from, byKind] of Object.entries(outcomes)) {
    for (const [kind, want] of Object.entries(byKind)) {
      const state = from === 'null' ? null : inStatus(from as KycStatus);
      const command: KycCommand = kind === 'Submit' ? submit() : { kind: 'Reject', reason: 'r' };
      const decision = decideKyc(state, command, { nowMs: nowMs + 10 });
      const label = `${from} × ${kind}`;
      if (!decision.ok) {
        assert.equal(decision.rejection.code, want, label);
      } else if (decision.events.length === 0) {
        assert.equal(want, 'no-op', label);
      } else {
        let after = state;
        for (const event of decision.events) after = evolveKyc(after, event);
        assert.equal(after?.status, want, label);
      }
    }
  }
});

test('evolve: events that do not fit are bugs', () => {
  const approved = inStatus('APPROVED');
  const decision = decideKyc(null, submit(), { nowMs });
  assert.ok(decision.ok);
  const [approvedEvent] = decision.events;
  assert.ok(approvedEvent);
  assert.throws(() => evolveKyc(approved, approvedEvent), /invariant/);
  assert.throws(() => evolveKyc(inStatus('REJECTED'), approvedEvent), /invariant/);
  assert.throws(() => evolveKyc(null, { type: 'Rejected', atMs: nowMs, reason: 'x' }), /invariant/);
  assert.throws(() => decideKyc(approved, { kind: 'Submit', partnerId: 'other', userId: 'user-1', submission: valid }, { nowMs }), /invariant/);
});
