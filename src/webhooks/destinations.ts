// Webhook destinations per partner: the live URL and signing secret, a staged draft URL that is
// tested and then activated or discarded, and a staged next secret (rotation, independent of the
// URL) that is activated or discarded (docs/webhooks.md, "Destinations").
//
// Stored per partner as a small CAS actor (`webhook-destination/<partnerId>`) mirrored into the
// `webhook_destinations` read model, which the dispatcher reads at every attempt: a change takes
// effect with the next attempt, without a restart. Until an administrator changes anything, the
// partners file's `webhook` is the destination; the first change copies it into the store, and
// from then on the store wins.
//
// Secrets are never returned except once, to the administrator who asked: a new signing secret by
// `rotateSecret`, a draft's test secret by `stageDraft`.
//
// A draft URL is not trusted: it may be mistyped, or not the partner's at all. Its test delivery is
// signed with a test secret drawn for that draft (returned at staging), never with the live or the
// staged signing secret, so testing a URL can never hand a secret that signs live events to it.
//
// Test deliveries run in a pool of their own (slot-pool.ts), apart from the dispatcher's live
// slots: a test is never stuck behind live traffic (a partner whose live endpoint hangs can still
// test a new URL) and never takes a live slot; a burst of tests beyond the pool and its queue is
// refused at once (`test_busy`).
import { randomUUID } from 'node:crypto';
import type { JsonValue, SnapshotStore } from '../store/store.ts';
import { classify, type AttemptErrorCode } from './policy.ts';
import { destinationFromDoc, destinationsCollection, destinationToDoc, type DestinationRecord, type TestSummary } from './records.ts';
import { deliveryHeaders, generateSecret, generateTestSecret } from './signing.ts';
import { casUpdate } from './store-cas.ts';
import { SlotPool, type SlotPoolLimits } from './slot-pool.ts';
import { responseExcerpt, testExcerptBytesMax } from './response-excerpt.ts';
import { sendWebhook, type TransportLimits } from './transport.ts';
import { checkDestinationUrl, type UrlPolicyMode } from './url-policy.ts';

export const testEventName = 'webhook.test';

export interface PartnerWebhookSource {
  get(partnerId: string): { readonly webhook: { readonly url: string; readonly secret: string } | null } | undefined;
}

export type ResolvedDestination =
  | { readonly ok: true; readonly url: string; readonly secret: string }
  | { readonly ok: false; readonly error: Extract<AttemptErrorCode, 'no_destination' | 'secret_unavailable'> };

export interface DestinationView {
  readonly partnerId: string;
  /** Where the live URL comes from: changed by an administrator, the partners file, or nowhere. */
  readonly source: 'store' | 'partners_file' | 'none';
  readonly url: string | null;
  readonly secretConfigured: boolean;
  readonly draft: { readonly url: string; readonly stagedAtMs: number; readonly test: TestSummary | null } | null;
  readonly pendingSecret: { readonly stagedAtMs: number } | null;
  readonly updatedAtMs: number | null;
}

export type DestinationErrorCode = 'unknown_partner' | 'invalid_url' | 'no_draft' | 'draft_not_tested' | 'no_pending_secret' | 'secret_unavailable' | 'test_busy';

export type DestinationResult<T> = ({ readonly ok: true } & T) | { readonly ok: false; readonly code: DestinationErrorCode; readonly reason: string };

export interface DestinationsApi {
  get(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  /** Stages a draft URL (replacing any earlier draft) with a fresh test secret, returned once. The live URL is unchanged. */
  stageDraft(partnerId: string, url: string): Promise<DestinationResult<{ destination: DestinationView; testSecret: string }>>;
  /** Sends one `webhook.test` delivery to the draft URL, signed with the draft's test secret only; `test_busy` when too many tests are running. */
  testDraft(partnerId: string): Promise<DestinationResult<{ test: TestSummary; destination: DestinationView }>>;
  /** The draft becomes the live URL; only after its latest test succeeded (2xx). */
  activateDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  discardDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  /** Stages a fresh secret and returns it (the only time it is shown). Deliveries keep the live secret. */
  rotateSecret(partnerId: string): Promise<DestinationResult<{ secret: string; destination: DestinationView }>>;
  /** The staged secret becomes the signing secret for every following attempt. */
  activateSecret(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  discardSecret(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
}

export interface DestinationDeps {
  readonly store: SnapshotStore;
  readonly partners: PartnerWebhookSource;
  readonly mode: UrlPolicyMode;
  readonly clock: { nowMs(): number };
  readonly transport: TransportLimits;
  /** The test deliveries' own pool. */
  readonly tests: SlotPoolLimits;
}

export const defaultDestinationTestLimits: SlotPoolLimits = { inFlightMax: 4, queuedMax: 16 };

export function destinationActorKey(partnerId: string): string {
  return `webhook-destination/${partnerId}`;
}

export class Destinations implements DestinationsApi {
  private readonly tests: SlotPool;

  constructor(private readonly deps: DestinationDeps) {
    this.tests = new SlotPool(deps.tests);
  }

  /** What the dispatcher delivers to, read at every attempt. */
  async resolve(partnerId: string): Promise<ResolvedDestination> {
    const stored = destinationFromDoc(await this.deps.store.get(destinationsCollection, partnerId));
    const live = stored ?? this.fromFile(partnerId, 0);
    if (live === null || live.url === null) return { ok: false, error: 'no_destination' };
    if (live.secret === null || live.secret.length === 0) return { ok: false, error: 'secret_unavailable' };
    return { ok: true, url: live.url, secret: live.secret };
  }

  async get(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>> {
    if (this.deps.partners.get(partnerId) === undefined) return unknownPartner();
    const stored = destinationFromDoc(await this.deps.store.get(destinationsCollection, partnerId));
    return { ok: true, destination: this.view(partnerId, stored) };
  }

  async stageDraft(partnerId: string, url: string): Promise<DestinationResult<{ destination: DestinationView; testSecret: string }>> {
    const checked = checkDestinationUrl(url, this.deps.mode);
    if (!checked.ok) return { ok: false, code: 'invalid_url', reason: checked.reason };
    const href = checked.url.href;
    const testSecret = generateTestSecret();
    const changed = await this.change(partnerId, (current, nowMs) => ({ record: { ...current, draft: { url: href, stagedAtMs: nowMs, test: null, testSecret } } }));
    return changed.ok ? { ok: true, destination: changed.destination, testSecret } : changed;
  }

  async testDraft(partnerId: string): Promise<DestinationResult<{ test: TestSummary; destination: DestinationView }>> {
    const loaded = await this.current(partnerId);
    if (loaded === null) return unknownPartner();
    const draft = loaded.draft;
    if (draft === null) return { ok: false, code: 'no_draft', reason: 'No draft URL is staged' };
    const secret = draft.testSecret;
    if (secret === undefined) return { ok: false, code: 'secret_unavailable', reason: 'This draft has no test secret (it was staged before drafts had one); stage it again' };
    const pooled = await this.tests.run(() => this.sendTest(draft.url, secret));
    if (!pooled.ok) return { ok: false, code: 'test_busy', reason: 'Too many destination tests are running; try again shortly' };
    const test = pooled.value;
    const saved = await this.change(partnerId, (current) =>
      // Record the result only on the draft that was tested (another admin may have staged a new one).
      current.draft !== null && current.draft.url === draft.url && current.draft.stagedAtMs === draft.stagedAtMs
        ? { record: { ...current, draft: { ...current.draft, test } } }
        : { record: null },
    );
    if (!saved.ok) return saved;
    return { ok: true, test, destination: saved.destination };
  }

  async activateDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>> {
    return this.change(partnerId, (current) => {
      if (current.draft === null) return { error: { code: 'no_draft', reason: 'No draft URL is staged' } };
      if (current.draft.test?.ok !== true) return { error: { code: 'draft_not_tested', reason: 'The draft has no successful test delivery yet' } };
      const checked = checkDestinationUrl(current.draft.url, this.deps.mode);
      if (!checked.ok) return { error: { code: 'invalid_url', reason: checked.reason } };
      return { record: { ...current, url: current.draft.url, draft: null } };
    });
  }

  async discardDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>> {
    return this.change(partnerId, (current) => (current.draft === null ? { record: null } : { record: { ...current, draft: null } }));
  }

  async rotateSecret(partnerId: string): Promise<DestinationResult<{ secret: string; destination: DestinationView }>> {
    const secret = generateSecret();
    const changed = await this.change(partnerId, (current, nowMs) => ({ record: { ...current, pendingSecret: { secret, stagedAtMs: nowMs } } }));
    return changed.ok ? { ok: true, secret, destination: changed.destination } : changed;
  }

  async activateSecret(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>> {
    return this.change(partnerId, (current) =>
      current.pendingSecret === null
        ? { error: { code: 'no_pending_secret', reason: 'No staged secret; rotate first' } }
        : { record: { ...current, secret: current.pendingSecret.secret, pendingSecret: null } },
    );
  }

  async discardSecret(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>> {
    return this.change(partnerId, (current) => (current.pendingSecret === null ? { record: null } : { record: { ...current, pendingSecret: null } }));
  }

  // ---- internals ----

  private fromFile(partnerId: string, nowMs: number): DestinationRecord | null {
    const partner = this.deps.partners.get(partnerId);
    if (partner === undefined) return null;
    return {
      partnerId,
      url: partner.webhook?.url ?? null,
      secret: partner.webhook?.secret ?? null,
      draft: null,
      pendingSecret: null,
      updatedAtMs: nowMs,
    };
  }

  private async current(partnerId: string): Promise<DestinationRecord | null> {
    if (this.deps.partners.get(partnerId) === undefined) return null;
    return destinationFromDoc(await this.deps.store.get(destinationsCollection, partnerId)) ?? this.fromFile(partnerId, 0);
  }

  private view(partnerId: string, stored: DestinationRecord | null): DestinationView {
    const record = stored ?? this.fromFile(partnerId, 0);
    return {
      partnerId,
      source: stored !== null ? 'store' : record?.url != null ? 'partners_file' : 'none',
      url: record?.url ?? null,
      secretConfigured: record?.secret != null && record.secret.length > 0,
      // Never the test secret: it is shown once, at staging.
      draft: record?.draft ? { url: record.draft.url, stagedAtMs: record.draft.stagedAtMs, test: testView(record.draft.test) } : null,
      pendingSecret: record?.pendingSecret ? { stagedAtMs: record.pendingSecret.stagedAtMs } : null,
      updatedAtMs: stored?.updatedAtMs ?? null,
    };
  }

  /** One CAS change of the partner's destination; `record: null` = nothing to change. */
  private async change(
    partnerId: string,
    decide: (current: DestinationRecord, nowMs: number) => { record: DestinationRecord | null } | { error: { code: DestinationErrorCode; reason: string } },
  ): Promise<DestinationResult<{ destination: DestinationView }>> {
    if (this.deps.partners.get(partnerId) === undefined) return unknownPartner();
    type Outcome = DestinationResult<{ destination: DestinationView }>;
    return casUpdate<Outcome>(this.deps.store, destinationActorKey(partnerId), async (state: JsonValue | null) => {
      const nowMs = this.deps.clock.nowMs();
      const stored = destinationFromDoc(state);
      const current = stored ?? this.fromFile(partnerId, nowMs);
      if (current === null) return { change: null, result: unknownPartner() };
      const decided = decide(current, nowMs);
      if ('error' in decided) return { change: null, result: { ok: false, ...decided.error } };
      if (decided.record === null) return { change: null, result: { ok: true, destination: this.view(partnerId, stored) } };
      const record: DestinationRecord = { ...decided.record, updatedAtMs: nowMs };
      const doc = destinationToDoc(record);
      return {
        change: { state: doc, readModels: [{ collection: destinationsCollection, id: partnerId, doc }] },
        result: { ok: true, destination: this.view(partnerId, record) },
      };
    });
  }

  /**
   * The test delivery: `{ event: 'webhook.test', data: { id, createdAtMs } }` with the usual
   * headers (no sequence: a test is not in the event log), one attempt, redirects not followed.
   */
  private async sendTest(url: string, secret: string): Promise<TestSummary> {
    const nowMs = this.deps.clock.nowMs();
    const id = `test_${randomUUID()}`;
    const body = JSON.stringify({ event: testEventName, data: { id, createdAtMs: nowMs } });
    const eventId = `evt_test_${id.slice(5).replaceAll('-', '')}`;
    const headers = deliveryHeaders({ secret, eventId, sequence: null, attempt: 1, nowMs, body });
    // The only attempt whose answer is kept (an excerpt, for the administrator testing the URL).
    const sent = await sendWebhook({ url, headers, body, keepResponseBytes: testExcerptBytesMax }, this.deps.mode, this.deps.transport);
    const classification = classify(sent.result);
    return {
      ok: classification.outcome === 'delivered',
      atMs: nowMs,
      durationMs: sent.durationMs,
      httpStatus: sent.result.kind === 'response' ? sent.result.httpStatus : null,
      error: classification.outcome === 'delivered' ? null : classification.error,
      responseExcerpt: sent.response === undefined ? null : responseExcerpt(sent.response.bytes, sent.response.cut),
    };
  }
}

/** A stored test result as shown: results recorded before excerpts were kept have none (null). */
function testView(test: TestSummary | null): TestSummary | null {
  return test === null ? null : { ...test, responseExcerpt: test.responseExcerpt ?? null };
}

function unknownPartner(): { ok: false; code: 'unknown_partner'; reason: string } {
  return { ok: false, code: 'unknown_partner', reason: 'No such partner' };
}
