// BR Code (PIX QR) decoding: TLV parsing, CRC-16/CCITT-FALSE check and field extraction of the
// public test vector (FACTS.md). Baseline: JSON.parse + JSON.stringify of the same payload string.
import { decodeBrCode } from '../../src/rails/brcode.ts';
import { jsonRoundTripCase, repeatedCase, type MicroSuite } from '../lib/micro.ts';

const opsPerCall = 20;

/** The published example payload with its CRC (1D3D). */
export const brCodeVector =
  '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D';

export function brcodeSuite(): MicroSuite {
  const check = decodeBrCode(brCodeVector);
  if (!check.ok) throw new Error(`brcode bench: the vector does not decode (${check.reason})`);
  return {
    group: 'brcode',
    baselineLabel: 'JSON.parse+stringify of the same payload string',
    baseline: jsonRoundTripCase('baseline: JSON round trip of the payload', { qrCode: brCodeVector }, opsPerCall),
    cases: [repeatedCase('decodeBrCode (static PIX key, CRC checked)', opsPerCall, () => decodeBrCode(brCodeVector))],
  };
}
