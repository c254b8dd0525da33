// The `accept` command a transaction actor receives from the edge, as tests build it: a partner
// with KYB approved and KYC off, a BREB-style recipient, the rail up and no liquidity reading —
// the happy path, which each test bends with `overrides`.
import type { AcceptPayload } from '../../src/actors/transaction-actor.ts';
import type { Quote } from '../../src/domain/quote.ts';

export function acceptPayload(quote: Quote, overrides: Partial<AcceptPayload> = {}): AcceptPayload {
  return {
    partnerId: quote.partnerId,
    userId: 'user-1',
    quote,
    accountNumber: '@recipient',
    qrCode: null,
    taxId: null,
    externalId: null,
    kycEnabled: false,
    kycApproved: false,
    kybApproved: true,
    liquidity: null,
    railAvailable: true,
    paymentContext: { depositAddress: 'G-TEST' },
    ...overrides,
  };
}
