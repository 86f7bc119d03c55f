// The Prometheus text exposition format (version 0.0.4), written as prom-client writes it:
// `# HELP`, `# TYPE`, then one line per series; histograms as cumulative `_bucket{le}`, `_sum`
// and `_count`. A small writer rather than prom-client's registry: the request counters live in
// preallocated arrays (./counters.ts) that its Histogram cannot be fed from without its internals.
import { BUCKETS } from "./counters";

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

export type Labels = Readonly<Record<string, string>>;

const labelText = (labels: Labels): string => {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
};

export class Exposition {
  private readonly parts: string[] = [];

  private head(name: string, help: string, type: "counter" | "gauge" | "histogram"): void {
    this.parts.push(`# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`);
  }

  /** A counter or gauge: its series (possibly none: the family is still listed). */
  metric(name: string, help: string, type: "counter" | "gauge", series: ReadonlyArray<readonly [Labels, number]>): this {
    this.head(name, help, type);
    for (const [labels, value] of series) this.parts.push(`${name}${labelText(labels)} ${value}\n`);
    return this;
  }

  histogram(name: string, help: string, series: ReadonlyArray<{ labels: Labels; cumulative: readonly number[]; sum: number; count: number }>): this {
    this.head(name, help, "histogram");
    for (const s of series) {
      for (let b = 0; b < BUCKETS.length; b++) this.parts.push(`${name}_bucket${labelText({ ...s.labels, le: String(BUCKETS[b]) })} ${s.cumulative[b]}\n`);
      this.parts.push(`${name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${s.count}\n`);
      this.parts.push(`${name}_sum${labelText(s.labels)} ${s.sum}\n${name}_count${labelText(s.labels)} ${s.count}\n`);
    }
    return this;
  }

  text(): string {
    return this.parts.join("");
  }
}
