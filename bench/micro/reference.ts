// Memo encoding: the transaction reference (Base64 of the UUID's 16 bytes, the Stellar memo) and
// its decoding back to the id. Baseline: JSON.parse + JSON.stringify of the id.
import { transactionIdFromReference, transactionReference } from '../../src/domain/reference.ts';
import { jsonRoundTripCase, repeatedCase, type MicroSuite } from '../lib/micro.ts';

const opsPerCall = 100;
const transactionId = '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f';

export function referenceSuite(): MicroSuite {
  const reference = transactionReference(transactionId);
  if (transactionIdFromReference(reference) !== transactionId) throw new Error('reference bench: round trip failed');
  return {
    group: 'reference',
    baselineLabel: 'JSON.parse+stringify of the transaction id',
    baseline: jsonRoundTripCase('baseline: JSON round trip of the id', { id: transactionId }, opsPerCall),
    cases: [
      repeatedCase('transactionReference (encode memo)', opsPerCall, () => transactionReference(transactionId)),
      repeatedCase('transactionIdFromReference (decode memo)', opsPerCall, () => transactionIdFromReference(reference)),
    ],
  };
}
