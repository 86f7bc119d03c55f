// What the process counts, as plain numbers in arrays allocated once: the request path adds to them
// without allocating, and a scrape (./text.ts) turns them into the Prometheus text format. Label
// values come from closed sets (route families, methods, status classes, channels, outcomes) or
// from what an operator provisions (DNI pool keys), never from a request: no id, key or address
// can become a label.

/** Route families: what a request is counted and logged under (never its raw path, which holds ids). */
export const FAMILIES = [
  "intake", "api_v1", "kpi", "calls", "cti_queue", "dni", "dni_script", "booking", "booking_page",
  "callbacks", "unsubscribe", "health", "docs", "metrics", "demo", "console", "conversions", "unknown",
] as const;
export type Family = (typeof FAMILIES)[number];

const METHODS = ["GET", "POST", "OPTIONS", "other"] as const;
const CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;
/**
 * Upper bounds of the duration histogram, in seconds (+Inf is the count). 0.2: the console reports'
 * target is "99% within 200 ms of server time" (issue 30, bench/reports.ts), which 0.1 and 0.25 alone
 * cannot tell.
 */
export const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const BUCKETS_MS = BUCKETS.map((s) => s * 1000);

const F = FAMILIES.length;
const M = METHODS.length;
const C = CLASSES.length;
const B = BUCKETS.length;

export const familyIndex = (family: Family): number => FAMILIES.indexOf(family);

const requests = new Float64Array(F * M * C);
const seconds = new Float64Array(F * M * C);
// Per series, the count of durations in each bucket (not cumulative; summed at scrape) and above the last.
const buckets = new Float64Array(F * M * C * (B + 1));
const refusals = new Float64Array(F);

const methodIndex = (method: string): number => (method === "GET" ? 0 : method === "POST" ? 1 : method === "OPTIONS" ? 2 : 3);
const classIndex = (status: number): number => {
  const c = ((status / 100) | 0) - 1;
  return c < 0 ? 0 : c > 4 ? 4 : c;
};

/** One answered request of family `f` (familyIndex), in `ms` milliseconds. */
export function countRequest(f: number, method: string, status: number, ms: number): void {
  const series = (f * M + methodIndex(method)) * C + classIndex(status);
  requests[series]++;
  seconds[series] += ms / 1000;
  let b = 0;
  while (b < B && ms > BUCKETS_MS[b]!) b++;
  buckets[series * (B + 1) + b]++;
  // 429 is rate_limited on every surface (src/errors.ts): the limiter's refusals, counted where answered.
  if (status === 429) refusals[f]++;
}

/** A counter with a few labels from closed sets; keyed by the joined label values. */
export class LabelledCounter {
  readonly values = new Map<string, { labels: readonly string[]; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  inc(...labels: string[]): void {
    const key = labels.join("\u0000");
    const found = this.values.get(key);
    if (found) found.value++;
    else this.values.set(key, { labels, value: 1 });
  }
}

export const messageSends = new LabelledCounter("leadline_message_sends_total", "Provider calls for messages, by channel and outcome (sent, failed).", ["channel", "outcome"]);
export const webhookDeliveries = new LabelledCounter(
  "leadline_webhook_deliveries_total",
  "Webhook delivery attempts, by outcome (delivered, retry, failed, gone).",
  ["outcome"],
);
export const dniFallbacks = new LabelledCounter("leadline_dni_fallbacks_total", "DNI leases answered with the pool's fallback number, by pool.", ["pool"]);

/** The request series as they stand, for the writer. */
export interface RequestSeries {
  family: Family;
  method: string;
  status: string;
  count: number;
  sum: number;
  /** Cumulative, one per BUCKETS entry. */
  cumulative: number[];
}

export function requestSeries(): RequestSeries[] {
  const out: RequestSeries[] = [];
  for (let f = 0; f < F; f++)
    for (let m = 0; m < M; m++)
      for (let c = 0; c < C; c++) {
        const series = (f * M + m) * C + c;
        if (requests[series] === 0) continue;
        const cumulative: number[] = [];
        let total = 0;
        for (let b = 0; b < B; b++) cumulative.push((total += buckets[series * (B + 1) + b]!));
        out.push({ family: FAMILIES[f]!, method: METHODS[m]!, status: CLASSES[c]!, count: requests[series]!, sum: seconds[series]!, cumulative });
      }
  return out;
}

export const refusalsByFamily = (): Array<[Family, number]> => FAMILIES.map((f, i) => [f, refusals[i]!] as [Family, number]).filter(([, n]) => n > 0);
