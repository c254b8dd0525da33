// Bulk redelivery for the admin service: every failed webhook delivery of one partner whose event
// was created in a time range gets a fresh attempt budget (after a partner's endpoint was down for
// an afternoon, say). Each event goes through the delivery log's own redeliver, the same atomic
// commit as a single redelivery, so a bulk run and a single click never start two runs of one event.

/** What bulk redelivery needs of the delivery log (src/webhooks/deliveries.ts). */
export interface FailedDeliveries {
  list(
    partnerId: string,
    query: { readonly status: 'failed'; readonly limit: number; readonly offset: number },
  ): Promise<{ readonly deliveries: ReadonlyArray<{ readonly eventId: string; readonly createdAtMs: number }> }>;
  redeliver(partnerId: string, eventId: string, nowMs: number): Promise<{ readonly ok: boolean }>;
}

/** At most this many events are redelivered by one call; `truncated` says when more may remain. */
export const bulkRedeliverMax = 1_000;
/** Failed deliveries read per page, and pages read at most per call (the scan's bound). */
const scanPageSize = 500;
const scanPagesMax = 20;

export interface BulkRedeliverResult {
  readonly eventIds: readonly string[];
  /** Found failed, but its redelivery was refused (another run started it meanwhile). */
  readonly refused: number;
  readonly truncated: boolean;
}

/**
 * Collects first, then redelivers: a redelivered event leaves the `failed` listing, so redelivering
 * while paging by offset would skip rows. The listing is newest first by the partner's event
 * sequence, which follows creation time, so the scan stops after the first page that reaches past
 * `fromMs` (that page is still filtered whole: processes' clocks may differ by a few ms).
 */
export async function redeliverFailed(
  log: FailedDeliveries,
  partnerId: string,
  range: { readonly fromMs: number; readonly toMs: number; readonly limit: number; readonly nowMs: number },
): Promise<BulkRedeliverResult> {
  const limit = Math.min(Math.max(1, range.limit), bulkRedeliverMax);
  const candidates: string[] = [];
  let truncated = false;
  scan: for (let page = 0; ; page += 1) {
    if (page === scanPagesMax) {
      truncated = true;
      break;
    }
    const { deliveries } = await log.list(partnerId, { status: 'failed', limit: scanPageSize, offset: page * scanPageSize });
    for (const delivery of deliveries) {
      if (delivery.createdAtMs >= range.toMs || delivery.createdAtMs < range.fromMs) continue;
      if (candidates.length === limit) {
        truncated = true;
        break scan;
      }
      candidates.push(delivery.eventId);
    }
    const oldest = deliveries[deliveries.length - 1];
    if (deliveries.length < scanPageSize || oldest === undefined || oldest.createdAtMs < range.fromMs) break;
  }
  const eventIds: string[] = [];
  let refused = 0;
  for (const eventId of candidates) {
    if ((await log.redeliver(partnerId, eventId, range.nowMs)).ok) eventIds.push(eventId);
    else refused += 1;
  }
  return { eventIds, refused, truncated };
}
