// A log of refusals (failed authentications, throttled requests) that writes at most one line per
// client address per interval, and at most `linesPerIntervalMax` lines per interval in all: a
// flood of 20,000 wrong keys from one address is one line a minute with a count, not 20,000 lines.
// The exact numbers are the counters on /metrics (src/edge/auth-throttle.ts); this log is for a
// human asking "who, from where, since when".
//
// Each line carries `notLoggedSinceLastLine`: the refusals from that address since its previous
// line that were only counted. Lines dropped by the overall budget are reported in the first line
// of the next interval (`notLoggedOverBudget`). The per-address memory is an LRU of at most
// `addressesMax` entries; an evicted address's count is lost (the metrics still have it).

export interface SampledAddressLogOptions {
  /** Writes one line (the caller's logger; fields include `address` and the counts). */
  readonly write: (fields: Readonly<Record<string, unknown>>) => void;
  /** Monotonic milliseconds. */
  readonly nowMs: () => number;
  /** One line per address per this long; 60 s by default. */
  readonly intervalMs?: number;
  /** Lines per interval, all addresses together; 100 by default. */
  readonly linesPerIntervalMax?: number;
  /** Addresses remembered; 10,000 by default. */
  readonly addressesMax?: number;
}

interface AddressEntry {
  lineAtMs: number;
  notLogged: number;
}

export interface SampledAddressLog {
  /** One refusal from `address`: a line now (true) or only a count (false). */
  note(address: string, fields: Readonly<Record<string, unknown>>): boolean;
}

export function createSampledAddressLog(options: SampledAddressLogOptions): SampledAddressLog {
  const intervalMs = options.intervalMs ?? 60_000;
  const linesMax = options.linesPerIntervalMax ?? 100;
  const addressesMax = options.addressesMax ?? 10_000;
  if (!(intervalMs > 0) || !Number.isInteger(linesMax) || linesMax < 1 || !Number.isInteger(addressesMax) || addressesMax < 1) {
    throw new RangeError('intervalMs must be positive; linesPerIntervalMax and addressesMax integers ≥ 1');
  }
  // Insertion order is recency order: an entry is moved to the end when it writes a line.
  const entries = new Map<string, AddressEntry>();
  let budgetStartedAtMs = Number.NEGATIVE_INFINITY;
  let linesInBudget = 0;
  let overBudget = 0;

  function remember(address: string, entry: AddressEntry): void {
    entries.delete(address);
    entries.set(address, entry);
    if (entries.size > addressesMax) {
      const oldest = entries.keys().next();
      if (oldest.done !== true) entries.delete(oldest.value);
    }
  }

  return {
    note(address, fields) {
      const nowMs = options.nowMs();
      const entry = entries.get(address);
      if (entry !== undefined && nowMs - entry.lineAtMs < intervalMs) {
        entry.notLogged += 1;
        return false;
      }
      if (nowMs - budgetStartedAtMs >= intervalMs) {
        budgetStartedAtMs = nowMs;
        linesInBudget = 0;
      }
      if (linesInBudget >= linesMax) {
        overBudget += 1;
        return false;
      }
      linesInBudget += 1;
      options.write({
        ...fields,
        address,
        notLoggedSinceLastLine: entry?.notLogged ?? 0,
        ...(overBudget > 0 ? { notLoggedOverBudget: overBudget } : {}),
      });
      overBudget = 0;
      remember(address, { lineAtMs: nowMs, notLogged: 0 });
      return true;
    },
  };
}
