// The TypeScript client of the payouts and onramp API: a typed client (client.ts), the webhook
// verifier (webhooks.ts), the settlement receipt verifier (receipts.ts), and the types generated from the service's OpenAPI document (schema.ts).
export * from './client.ts';
export * from './webhooks.ts';
export * from './receipts.ts';
export type { components, operations, paths, webhooks } from './schema.ts';
