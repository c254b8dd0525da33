// The webhooks role and its services, built from the service context:
//   const webhooks = createWebhookServices(ctx);
//   const role = await webhooks.startWebhooksRole();   // the dispatcher loop; role.stop() on shutdown
//   webhooks.events        → GET /events (src/edge/routes/events.ts)
//   webhooks.deliveries    → delivery log and redelivery (admin service)
//   webhooks.destinations  → draft/test/activate/discard, secret rotation (admin service)
// See docs/webhooks.md.
import { randomUUID } from 'node:crypto';
import type { SnapshotStore } from '../store/store.ts';
import { createDeliveryLog, type DeliveryLog } from './deliveries.ts';
import { defaultDestinationTestLimits, Destinations, type DestinationsApi, type PartnerWebhookSource } from './destinations.ts';
import { checkBreakerPolicy, defaultBreakerPolicy, type BreakerPolicy } from './breaker.ts';
import type { SlotPoolLimits } from './slot-pool.ts';
import { WebhookDispatcher, type DispatcherLogger } from './dispatcher.ts';
import { defaultDispatcherLimits, type DispatcherLimits } from './dispatcher-limits.ts';
import { createEventLogReader, type EventLogReader } from './event-log.ts';
import { SandboxWebhookFaults } from './sandbox-faults.ts';
import { defaultDeliveryPolicy, type DeliveryPolicy } from './policy.ts';
import { checkTransportLimits, defaultTransportLimits, type TransportLimits } from './transport.ts';
import type { HealthCheck } from '../lifecycle/health.ts';
import type { MetricFamily } from '../lifecycle/metrics.ts';

export { webhookReadModelIndexes } from './records.ts';
export type { EventLogReader, EventsPage, PartnerEvent } from './event-log.ts';
export type { DeliveryLog, DeliveryView, RedeliverResult } from './deliveries.ts';
export type { DestinationsApi, DestinationView, DestinationResult } from './destinations.ts';

/** What the webhooks role needs from the service context (ServiceContext satisfies it). */
export interface WebhookContext {
  readonly env: { readonly sandbox: boolean };
  readonly processId: string;
  readonly clock: { nowMs(): number };
  readonly log: DispatcherLogger;
  readonly store: SnapshotStore;
  readonly partners: PartnerWebhookSource;
}

export interface WebhookOptions {
  readonly policy?: Partial<DeliveryPolicy>;
  readonly transport?: Partial<TransportLimits>;
  readonly limits?: Partial<DispatcherLimits>;
  /** The per-partner destination breaker. */
  readonly breaker?: Partial<BreakerPolicy>;
  /** The destination tests' own pool. */
  readonly destinationTests?: Partial<SlotPoolLimits>;
  /** Jitter source, [0, 1). */
  readonly random?: () => number;
  /** Claim owner name; unique per dispatcher. */
  readonly owner?: string;
}

export interface RunningWebhooksRole {
  /** New outbox rows may be waiting (optional: the dispatcher polls anyway). */
  wake(): void;
  health(): HealthCheck;
  metrics(): MetricFamily[];
  /** Graceful: waits at most `waitMs` for deliveries in flight, then hands back every held row. */
  stop(waitMs?: number): Promise<void>;
}

export interface WebhookServices {
  startWebhooksRole(): Promise<RunningWebhooksRole>;
  /** A dispatcher that is not started: tests drive it with `runRound()`. */
  createDispatcher(overrides?: { readonly owner?: string }): WebhookDispatcher;
  readonly events: EventLogReader;
  readonly deliveries: DeliveryLog;
  readonly destinations: DestinationsApi;
}

export function createWebhookServices(ctx: WebhookContext, options: WebhookOptions = {}): WebhookServices {
  const mode = { sandbox: ctx.env.sandbox };
  const policy: DeliveryPolicy = { ...defaultDeliveryPolicy, ...options.policy };
  const transport: TransportLimits = { ...defaultTransportLimits, ...options.transport };
  checkTransportLimits(transport);
  const limits: DispatcherLimits = { ...defaultDispatcherLimits, ...options.limits };
  const breaker: BreakerPolicy = { ...defaultBreakerPolicy, ...options.breaker };
  checkBreakerPolicy(breaker);
  const tests: SlotPoolLimits = { ...defaultDestinationTestLimits, ...options.destinationTests };
  // Sandbox mode only: the partners' rehearsal faults (docs/sandbox.md); never built otherwise.
  const faults = ctx.env.sandbox ? new SandboxWebhookFaults({ store: ctx.store, clock: ctx.clock }) : undefined;
  const destinations = new Destinations({ store: ctx.store, partners: ctx.partners, mode, clock: ctx.clock, transport, tests });
  const createDispatcher = (overrides: { readonly owner?: string } = {}): WebhookDispatcher =>
    new WebhookDispatcher({
      store: ctx.store,
      clock: ctx.clock,
      log: ctx.log,
      owner: overrides.owner ?? options.owner ?? `webhooks-${ctx.processId}-${randomUUID().slice(0, 8)}`,
      mode,
      policy,
      transport,
      limits,
      breaker,
      random: options.random ?? Math.random,
      resolveDestination: (partnerId) => destinations.resolve(partnerId),
      ...(faults === undefined ? {} : { faults }),
    });
  return {
    async startWebhooksRole() {
      const dispatcher = createDispatcher();
      dispatcher.start();
      ctx.log.info({ owner: 'webhooks' }, 'webhooks role started');
      return { wake: () => dispatcher.wake(), health: () => dispatcher.health(), metrics: () => dispatcher.metrics(), stop: (waitMs) => dispatcher.stop(waitMs) };
    },
    createDispatcher,
    events: createEventLogReader(ctx.store),
    deliveries: createDeliveryLog(ctx.store),
    destinations,
  };
}

export { WebhookDispatcher } from './dispatcher.ts';
