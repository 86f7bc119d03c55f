// Small server-rendered SVG charts: values by day as bars or a line, with axis labels, a <title>
// and <desc> for screen readers, and the same numbers as a text table beside the picture (a chart
// alone says nothing to someone who cannot see it, and nothing exact to anyone).
// The console's CSP forbids style attributes: geometry is in SVG attributes, colours in CSS
// classes (`chart-s0`, `chart-s1`, … in assets/reports.css).
import { html, type Html } from "./html";

export interface Series {
  name: string;
  /** One value per label; null where there is no data. */
  values: (number | null)[];
  /** Whether a total means something (a count per day), unlike a peak per day; default true. */
  total?: boolean;
  /** Drawn as a line over the bars whatever the chart's kind (a comparison: the previous period). */
  line?: boolean;
  /** Its colour's class when not its place's (`chart-s0`, …): `chart-prev` for a comparison. */
  tone?: string;
}

export interface ChartSpec {
  /** Unique on the page: the ids of the title and description derive from it. */
  id: string;
  title: string;
  /** 'YYYY-MM-DD' days, oldest first. */
  labels: string[];
  series: Series[];
  kind: "bar" | "line";
  /** Shown after the summary's figures, e.g. "holds". */
  unit?: string;
  /** Bars of the series stacked on each other (parts of one whole, e.g. a metric by dimension). */
  stacked?: boolean;
  /** The table's rows carry the stacked bars' total in a column of its own. */
  totalColumn?: boolean;
}

const W = 720;
const H = 240;
const PAD = { left: 48, right: 12, top: 12, bottom: 36 };
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "2026-11-05" → "Nov 5". */
export function dayLabel(day: string): string {
  const [, m, d] = day.split("-").map(Number);
  return m >= 1 && m <= 12 ? `${MONTHS[m - 1]} ${d}` : day;
}

/** The smallest 1, 2 or 5 × 10ⁿ at or above `v`. */
function nice(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5]) if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

/**
 * The y axis's ticks, from 0 up to at or above `max`: at most five, a step of 1, 2 or 5 × 10ⁿ
 * (whole numbers when every value is one: no "1.25 holds").
 */
export function axisTicks(max: number, whole: boolean): number[] {
  if (!(max > 0)) return [0, 1];
  let step = nice(max / 4);
  if (whole) step = Math.max(1, Math.round(step));
  const top = Math.ceil(max / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let i = 0; i * step <= top + step / 2; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

const fmt = (v: number) => (Number.isInteger(v) ? v.toLocaleString("en-US") : v.toLocaleString("en-US", { maximumFractionDigits: 2 }));
const r1 = (v: number) => Math.round(v * 10) / 10;

/** One line of figures per series: its highest day and its total. */
export function chartSummary(spec: ChartSpec): string {
  const unit = spec.unit ? ` ${spec.unit}` : "";
  return spec.series
    .map((s) => {
      let best = -1;
      let total = 0;
      s.values.forEach((v, i) => {
        if (v === null) return;
        total += v;
        if (best < 0 || v > (s.values[best] ?? 0)) best = i;
      });
      if (best < 0) return `${s.name}: no data.`;
      const sum = s.total === false ? "" : `, total ${fmt(total)}${unit}`;
      return `${s.name}: highest ${fmt(s.values[best]!)}${unit} on ${dayLabel(spec.labels[best])}${sum}.`;
    })
    .join(" ");
}

const toneOf = (s: Series, si: number) => s.tone ?? `chart-s${si}`;

/** Each day's stacked total of the bar series: the part above zero, which is what is drawn. */
export function stackedTotals(spec: ChartSpec): number[] {
  const bars = spec.series.filter((s) => !s.line);
  return spec.labels.map((_, i) => bars.reduce((a, s) => a + Math.max(0, s.values[i] ?? 0), 0));
}

export function chart(spec: ChartSpec): Html {
  const n = spec.labels.length;
  const values = spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const drawn = spec.stacked ? [...stackedTotals(spec), ...spec.series.filter((s) => s.line).flatMap((s) => s.values.filter((v): v is number => v !== null))] : values;
  const ticks = axisTicks(Math.max(0, ...drawn), values.every(Number.isInteger));
  const max = ticks[ticks.length - 1];
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(n, 1);
  const y = (v: number) => r1(PAD.top + plotH - (v / max) * plotH);
  // About eight x labels, whatever the number of days.
  const every = Math.max(1, Math.ceil(n / 8));
  const titleId = `${spec.id}-title`;
  const descId = `${spec.id}-desc`;
  const summary = chartSummary(spec);

  const grid = ticks.map(
    (t) => html`<line class="chart-grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(t)}" y2="${y(t)}"></line>
      <text class="chart-axis" x="${PAD.left - 6}" y="${y(t) + 4}" text-anchor="end">${fmt(t)}</text>`,
  );
  const xLabels = spec.labels.map((d, i) =>
    i % every === 0
      ? html`<text class="chart-axis" x="${r1(PAD.left + slot * i + slot / 2)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${dayLabel(d)}</text>`
      : null,
  );
  const placed = spec.series.map((s, si) => ({ s, si }));
  const asBars = spec.kind === "bar" ? placed.filter((p) => !p.s.line) : [];
  const asLines = spec.kind === "bar" ? placed.filter((p) => p.s.line) : placed;
  let marks: Html[];
  if (spec.stacked) {
    const barW = Math.max(1, slot * 0.8);
    const base = spec.labels.map(() => 0);
    marks = asBars.flatMap(({ s, si }) =>
      s.values.map((v, i) => {
        if (v === null || v <= 0) return html``;
        const bottom = base[i];
        base[i] += v;
        const x = r1(PAD.left + slot * i + slot * 0.1);
        return html`<rect class="${toneOf(s, si)}" x="${x}" y="${y(base[i])}" width="${r1(barW)}" height="${r1(y(bottom) - y(base[i]))}"><title>${s.name}, ${dayLabel(spec.labels[i])}: ${fmt(v)}</title></rect>`;
      }),
    );
  } else {
    const k = asBars.length;
    const barW = Math.max(1, (slot * 0.8) / Math.max(k, 1));
    marks = asBars.flatMap(({ s, si }, bi) =>
      s.values.map((v, i) => {
        if (v === null || v <= 0) return html``;
        const x = r1(PAD.left + slot * i + slot * 0.1 + barW * bi);
        return html`<rect class="${toneOf(s, si)}" x="${x}" y="${y(v)}" width="${r1(barW)}" height="${r1(PAD.top + plotH - y(v))}"><title>${s.name}, ${dayLabel(spec.labels[i])}: ${fmt(v)}</title></rect>`;
      }),
    );
  }
  marks.push(
    ...asLines.flatMap(({ s, si }) => {
      const pts = s.values
        .map((v, i) => (v === null ? null : `${r1(PAD.left + slot * i + slot / 2)},${y(v)}`))
        .filter((p): p is string => p !== null);
      const dots = s.values.map((v, i) =>
        v === null
          ? html``
          : html`<circle class="${toneOf(s, si)}" cx="${r1(PAD.left + slot * i + slot / 2)}" cy="${y(v)}" r="3"><title>${s.name}, ${dayLabel(spec.labels[i])}: ${fmt(v)}</title></circle>`,
      );
      return [html`<polyline class="chart-line ${toneOf(s, si)}" points="${pts.join(" ")}"></polyline>`, ...dots];
    }),
  );
  const legend =
    spec.series.length > 1
      ? html`<ul class="chart-legend">${spec.series.map((s, si) => html`<li><span class="chart-key ${toneOf(s, si)}${s.line ? " chart-key-line" : ""}" aria-hidden="true"></span>${s.name}</li>`)}</ul>`
      : null;
  const table = chartTable(spec);
  // On a phone the picture keeps a readable size and scrolls sideways (a focusable region, so the
  // keyboard can scroll it too); the table below has every number anyway.
  return html`<figure class="chart">
  <div class="chart-scroll" tabindex="0" role="group" aria-label="${spec.title}">
  <svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${titleId} ${descId}" focusable="false">
    <title id="${titleId}">${spec.title}</title>
    <desc id="${descId}">${summary}</desc>
    ${grid}
    <line class="chart-baseline" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(0)}" y2="${y(0)}"></line>
    ${marks}
    ${xLabels}
  </svg>
  </div>
  <figcaption>${legend}<p class="muted">${summary}</p></figcaption>
  <details class="chart-data">
    <summary>${spec.title}: the numbers</summary>
    <div class="table-wrap" tabindex="0" role="region" aria-label="${spec.title}: the numbers"><table class="data">
      <thead><tr>${table.header.map((h, i) => html`<th scope="col"${i === 0 ? null : html` class="num"`}>${h}</th>`)}</tr></thead>
      <tbody>${table.rows.map(([d, ...vs]) => html`<tr><th scope="row">${d}</th>${vs.map((v) => cell(v as number | null))}</tr>`)}</tbody>
    </table></div>
  </details>
</figure>`;
}

/**
 * The numbers of a chart as its table shows them (and a CSV of the chart writes them): the day, the
 * bar series, their total when `totalColumn`, then the line series. One function for both, so the
 * download is exactly what the page shows.
 */
export function chartTable(spec: ChartSpec): { header: string[]; rows: [string, ...(number | null)[]][] } {
  const bars = spec.kind === "bar" ? spec.series.filter((s) => !s.line) : [];
  const lines = spec.kind === "bar" ? spec.series.filter((s) => s.line) : spec.series;
  const totals = spec.totalColumn && bars.length > 1 ? stackedTotals(spec) : null;
  const header = ["Day", ...bars.map((s) => s.name), ...(totals ? ["Total"] : []), ...lines.map((s) => s.name)];
  const rows = spec.labels.map((d, i): [string, ...(number | null)[]] => [
    d,
    ...bars.map((s) => s.values[i] ?? null),
    ...(totals ? [totals[i]] : []),
    ...lines.map((s) => s.values[i] ?? null),
  ]);
  return { header, rows };
}

const cell = (v: number | null | undefined) => html`<td class="num">${v === null || v === undefined ? "–" : fmt(v)}</td>`;

/** Every day from `from` to `to` inclusive ('YYYY-MM-DD'), for series that skip days without data. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end && out.length < 1000; t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}
