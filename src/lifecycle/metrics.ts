// Numbers of the roles that serve no partner HTTP (payout, watcher, webhooks, and every role's
// loops), in the Prometheus text format, served on the health listener's GET /metrics with the ops
// key. The edge's own /metrics (src/edge/routes/metrics.ts) covers HTTP and the shard cluster.
//
// The primitives (a family, its text rendering, the shorthands) and the health report's families
// live here, below every worker that reports numbers; the families of each role's own workers are
// put together by the composition root (src/service/role-metrics.ts). A role hands over plain
// families; this module only renders them. Labels are bounded by construction: check names,
// networks, watcher states and outcome words are fixed sets.
import type { HealthReport } from './health.ts';

export interface MetricSample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly samples: readonly MetricSample[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/**
 * The text exposition of `families`. Families with the same name (two workers of one kind in a
 * process) are merged under one HELP/TYPE, as the format requires.
 */
export function renderFamilies(families: readonly MetricFamily[]): string {
  const merged = new Map<string, { family: MetricFamily; samples: MetricSample[] }>();
  for (const family of families) {
    const seen = merged.get(family.name);
    if (seen === undefined) merged.set(family.name, { family, samples: [...family.samples] });
    else seen.samples.push(...family.samples);
  }
  const lines: string[] = [];
  for (const { family, samples } of merged.values()) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of samples) {
      const labels = Object.entries(sample.labels ?? {});
      const text = labels.length === 0 ? '' : `{${labels.map(([key, value]) => `${key}="${escapeLabel(value)}"`).join(',')}}`;
      lines.push(`${family.name}${text} ${formatValue(sample.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** Shorthands for a family of one unlabelled sample. */
export function gauge(name: string, help: string, value: number): MetricFamily {
  return { name, type: 'gauge', help, samples: [{ value }] };
}

export function counter(name: string, help: string, value: number): MetricFamily {
  return { name, type: 'counter', help, samples: [{ value }] };
}

/** A counter family with one label: a sample per value of it, in the order given. */
export function countersBy(name: string, help: string, label: string, values: Readonly<Record<string, number>>): MetricFamily {
  return { name, type: 'counter', help, samples: Object.entries(values).map(([value, count]) => ({ labels: { [label]: value }, value: count })) };
}

/** Every check of the health report: ready and live, and for loops their rounds. */
export function healthMetrics(report: HealthReport): MetricFamily[] {
  const checks = Object.entries(report.checks);
  const loops = checks.filter(([, check]) => typeof check.detail['rounds'] === 'number');
  const detail = (name: string, key: string, type: MetricFamily['type'], help: string, scale = 1): MetricFamily => ({
    name,
    type,
    help,
    samples: loops.map(([check, value]) => ({ labels: { check }, value: Number(value.detail[key] ?? 0) * scale })),
  });
  return [
    { name: 'role_check_ready', type: 'gauge', help: 'Whether the check is ready (1) or not (0): the /readyz of this process, per check.', samples: checks.map(([check, value]) => ({ labels: { check }, value: value.ready ? 1 : 0 })) },
    { name: 'role_check_live', type: 'gauge', help: 'Whether the check is live (1) or stuck (0): the /healthz of this process, per check.', samples: checks.map(([check, value]) => ({ labels: { check }, value: value.live ? 1 : 0 })) },
    detail('role_loop_rounds_total', 'rounds', 'counter', 'Rounds the loop finished since the process started, successful or not.'),
    detail('role_loop_consecutive_failures', 'consecutiveFailures', 'gauge', 'Rounds that failed in a row (0 after a success).'),
    detail('role_loop_last_success_age_seconds', 'lastSuccessAgoMs', 'gauge', 'Time since the loop last finished a round successfully (or since the process started).', 1 / 1000),
  ];
}
