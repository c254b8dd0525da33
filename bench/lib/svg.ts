// A hand-written SVG of a run: throughput (left) and p99 latency (right) against concurrency, one
// line per series (a scenario on a system and topology). No plotting dependency: axes, ticks,
// polylines, markers and a legend, all computed here. The x axis is categorical (the measured
// connection counts, evenly spaced); the y axes are logarithmic, because the systems compared
// differ by orders of magnitude (tens to tens of thousands of requests per second).
import type { HttpPoint } from './results.ts';

export interface Series {
  readonly label: string;
  readonly points: ReadonlyArray<{ readonly connections: number; readonly throughput: number; readonly p99Ms: number }>;
}

const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];
const panelWidth = 460;
const panelHeight = 300;
const margin = { left: 70, right: 20, top: 40, bottom: 50 };
const legendLineHeight = 18;

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A logarithmic axis covering every value: from a power of ten at or below the smallest to one at or above the largest. */
export function logScale(values: readonly number[]): { min: number; max: number; ticks: number[] } {
  const positive = values.filter((value) => value > 0 && Number.isFinite(value));
  if (positive.length === 0) return { min: 1, max: 10, ticks: [1, 2, 5, 10] };
  const low = Math.floor(Math.log10(Math.min(...positive)));
  const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(...positive))));
  const ticks: number[] = [];
  for (let exponent = low; exponent <= high; exponent += 1) {
    for (const factor of [1, 2, 5]) {
      const tick = factor * 10 ** exponent;
      if (tick <= 10 ** high) ticks.push(tick);
    }
  }
  return { min: 10 ** low, max: 10 ** high, ticks };
}

function formatTick(value: number): string {
  if (value >= 10_000) return `${value / 1000}k`;
  return String(Number(value.toPrecision(3)));
}

function panel(
  series: readonly Series[],
  xValues: readonly number[],
  pick: (point: Series['points'][number]) => number,
  title: string,
  yLabel: string,
  offsetX: number,
): string {
  const plotWidth = panelWidth - margin.left - margin.right;
  const plotHeight = panelHeight - margin.top - margin.bottom;
  const scale = logScale(series.flatMap((item) => item.points.map(pick)));
  const span = Math.log10(scale.max) - Math.log10(scale.min);
  const xOf = (connections: number): number => {
    const index = xValues.indexOf(connections);
    const slots = Math.max(1, xValues.length - 1);
    return margin.left + (xValues.length === 1 ? plotWidth / 2 : (index / slots) * plotWidth);
  };
  const yOf = (value: number): number => margin.top + plotHeight - ((Math.log10(Math.max(value, scale.min)) - Math.log10(scale.min)) / span) * plotHeight;
  const parts: string[] = [`<g transform="translate(${offsetX},0)">`];
  parts.push(`<text x="${margin.left + plotWidth / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`);
  for (const tick of scale.ticks) {
    const y = yOf(tick).toFixed(1);
    parts.push(`<line x1="${margin.left}" y1="${y}" x2="${margin.left + plotWidth}" y2="${y}" stroke="#e0e0e0"/>`);
    parts.push(`<text x="${margin.left - 6}" y="${(Number(y) + 4).toFixed(1)}" text-anchor="end" font-size="11">${formatTick(tick)}</text>`);
  }
  for (const connections of xValues) {
    const x = xOf(connections);
    parts.push(`<line x1="${x}" y1="${margin.top + plotHeight}" x2="${x}" y2="${margin.top + plotHeight + 5}" stroke="#333"/>`);
    parts.push(`<text x="${x}" y="${margin.top + plotHeight + 18}" text-anchor="middle" font-size="11">${connections}</text>`);
  }
  parts.push(`<line x1="${margin.left}" y1="${margin.top}" x2="${margin.left}" y2="${margin.top + plotHeight}" stroke="#333"/>`);
  parts.push(`<line x1="${margin.left}" y1="${margin.top + plotHeight}" x2="${margin.left + plotWidth}" y2="${margin.top + plotHeight}" stroke="#333"/>`);
  parts.push(`<text x="${margin.left + plotWidth / 2}" y="${panelHeight - 10}" text-anchor="middle" font-size="12">connections</text>`);
  parts.push(
    `<text x="16" y="${margin.top + plotHeight / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 16 ${margin.top + plotHeight / 2})">${escapeXml(yLabel)}</text>`,
  );
  series.forEach((item, index) => {
    const color = palette[index % palette.length] ?? '#000';
    const sorted = [...item.points].sort((a, b) => a.connections - b.connections);
    const coordinates = sorted.map((point) => `${xOf(point.connections).toFixed(1)},${yOf(pick(point)).toFixed(1)}`);
    if (coordinates.length > 1) parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${coordinates.join(' ')}"/>`);
    for (const point of sorted) {
      parts.push(`<circle cx="${xOf(point.connections).toFixed(1)}" cy="${yOf(pick(point)).toFixed(1)}" r="3.5" fill="${color}"/>`);
    }
  });
  parts.push('</g>');
  return parts.join('\n');
}

/** Series from the run's points: one per (scenario, system, topology) with more than zero points. */
export function seriesFromPoints(points: readonly HttpPoint[]): Series[] {
  const bySeries = new Map<string, Series['points'][number][]>();
  for (const point of points) {
    const label = point.system === 'service' ? `${point.scenario} (${point.topology})` : `${point.scenario}`;
    const list = bySeries.get(label) ?? [];
    list.push({ connections: point.connections, throughput: point.throughput, p99Ms: point.latency.p99Ms });
    bySeries.set(label, list);
  }
  return [...bySeries].map(([label, list]) => ({ label, points: list }));
}

export function renderPlot(series: readonly Series[], title: string): string {
  const xValues = [...new Set(series.flatMap((item) => item.points.map((point) => point.connections)))].sort((a, b) => a - b);
  const legendHeight = series.length * legendLineHeight + 20;
  const width = panelWidth * 2;
  const height = panelHeight + legendHeight + 30;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="16" text-anchor="middle" font-size="13" fill="#555">${escapeXml(title)}</text>`,
    `<g transform="translate(0,14)">`,
    panel(series, xValues, (point) => point.throughput, 'Throughput (log scale)', 'responses / s', 0),
    panel(series, xValues, (point) => point.p99Ms, 'p99 latency (log scale)', 'ms', panelWidth),
    '</g>',
  ];
  series.forEach((item, index) => {
    const color = palette[index % palette.length] ?? '#000';
    const y = panelHeight + 40 + index * legendLineHeight;
    parts.push(`<line x1="${margin.left}" y1="${y - 4}" x2="${margin.left + 24}" y2="${y - 4}" stroke="${color}" stroke-width="3"/>`);
    parts.push(`<text x="${margin.left + 32}" y="${y}" font-size="12">${escapeXml(item.label)}</text>`);
  });
  parts.push('</svg>\n');
  return parts.join('\n');
}
