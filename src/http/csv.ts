// CSV, streamed: rows go out batch by batch as the reader takes them, so a file of a million rows
// holds one batch in memory. Cells are quoted per RFC 4180, and a cell a spreadsheet would read as
// a formula (starting with = + - @, or a tab or carriage return that some strip first) gets a
// leading apostrophe (OWASP's CSV injection advice), so a lead named `=HYPERLINK(…)` stays text.
// Numbers are written as numbers. Used by the console's exports and the conversions feed.

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
 * A byte stream of `head` (lines written as they are: a header, or a preamble and a header) and
 * every row of `batches`. Pulled: the next batch is fetched only when the client has taken the
 * last, and a client that goes away cancels the stream, which ends the iterator.
 */
export function csvStream<T>(head: readonly string[] | string, batches: AsyncIterable<T[]>, cells: (row: T) => readonly unknown[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let it: AsyncIterator<T[]> | null = null;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(typeof head === "string" ? head : csvLine(head)));
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
