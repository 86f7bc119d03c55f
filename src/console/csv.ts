// CSV exports, streamed: rows go out batch by batch as the reader takes them, so an export of a
// million rows holds one batch in memory. Cells are quoted per RFC 4180, and a cell a spreadsheet
// would read as a formula (starting with = + - @, or a tab or carriage return that some strip
// first) gets a leading apostrophe (OWASP's CSV injection advice), so a lead named
// `=HYPERLINK(…)` stays text. Numbers are written as numbers.
import type { Route } from "../http/route";

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "";
  let s = v instanceof Date ? v.toISOString() : String(v);
  if (FORMULA_START.test(s)) s = "'" + s;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export const csvLine = (cells: readonly unknown[]) => cells.map(csvCell).join(",") + "\r\n";

/**
 * A byte stream of the header and every row of `batches`. Pulled: the next batch is fetched only
 * when the client has taken the last, and a client that goes away cancels the stream, which ends
 * the iterator.
 */
export function csvStream<T>(header: readonly string[], batches: AsyncIterable<T[]>, cells: (row: T) => readonly unknown[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let it: AsyncIterator<T[]> | null = null;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(csvLine(header)));
    },
    async pull(controller) {
      it ??= batches[Symbol.asyncIterator]();
      try {
        const next = await it.next();
        if (next.done) {
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(next.value.map((r) => csvLine(cells(r))).join("")));
      } catch (err) {
        controller.error(err);
      }
    },
    async cancel() {
      await it?.return?.();
    },
  });
}

/** A streamed CSV download named `filename`. */
export function csvResponse<T>(filename: string, header: readonly string[], rows: AsyncIterable<T[]>, cells: (row: T) => readonly unknown[]): Response {
  return new Response(csvStream(header, rows, cells), {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${filename}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}

/** A console page route whose 200 is a CSV file (csvResponse), documented so in /openapi.json. */
export const csvRoute = (route: Route, description: string): Route => ({
  ...route,
  answers: { ...route.answers, 200: { description, contentType: "text/csv" } },
});
