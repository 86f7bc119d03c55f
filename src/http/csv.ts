// CSV, streamed: rows go out batch by batch as the reader takes them, so a file of a million rows
// holds one batch in memory. Cells are quoted per RFC 4180, and a cell a spreadsheet would read as
// a formula gets a leading apostrophe (OWASP's CSV injection advice), so a lead named
// `=HYPERLINK(…)` stays text. Numbers are written as numbers. Used by the console's exports and
// the conversions feed.

/** Starting with = + - @, or a tab or carriage return that some spreadsheets strip first. */
const FORMULA_START = /^[=+\-@\t\r]/;
/**
 * A `;` or `,` followed (after any blanks) by = + - @: where the list separator is `;` (most of
 * Europe), a reader that splits an unquoted `Smith;=cmd|…` starts a new cell at the `=`, which the
 * prefix at the front would not protect; and some readers split on either. Such a value is taken
 * for a formula as a whole: prefixed, and quoted (as is any value with a `;`), so that it stays one
 * cell of text in either locale.
 */
const FORMULA_AFTER_SEPARATOR = /[;,]\s*[=+\-@]/;
const NEEDS_QUOTES = /[",;\r\n]/;

export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "";
  let s = v instanceof Date ? v.toISOString() : String(v);
  if (FORMULA_START.test(s) || FORMULA_AFTER_SEPARATOR.test(s)) s = "'" + s;
  return NEEDS_QUOTES.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export const csvLine = (cells: readonly unknown[]) => cells.map(csvCell).join(",") + "\r\n";

/** How a streamed export ended: every row sent, the client gone first, or a query failed. */
export type CsvOutcome = "complete" | "cancelled" | "failed";

/** Told once, when a stream ends, how many rows it handed to the connection and how it ended. */
export type CsvEnd = (rows: number, outcome: CsvOutcome) => Promise<void>;

/**
 * A byte stream of `head` (a header line of cells, or lines written as they are: a preamble and a
 * header) and every row of `batches`. Pulled: the next batch is fetched only
 * when the client has taken the last, and a client that goes away cancels the stream, which ends
 * the iterator. `onEnd` hears how it ended, after the last byte (or the failure) has gone.
 */
export function csvStream<T>(
  head: readonly string[] | string,
  batches: AsyncIterable<T[]>,
  cells: (row: T) => readonly unknown[],
  onEnd?: CsvEnd,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let it: AsyncIterator<T[]> | null = null;
  let rows = 0;
  let ended = false;
  const end = async (outcome: CsvOutcome) => {
    if (ended) return;
    ended = true;
    await onEnd?.(rows, outcome);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(typeof head === "string" ? head : csvLine(head)));
    },
    async pull(controller) {
      it ??= batches[Symbol.asyncIterator]();
      let next: IteratorResult<T[]>;
      try {
        next = await it.next();
      } catch (err) {
        controller.error(err);
        await end("failed");
        return;
      }
      if (next.done) {
        controller.close();
        await end("complete");
        return;
      }
      controller.enqueue(encoder.encode(next.value.map((r) => csvLine(cells(r))).join("")));
      rows += next.value.length;
    },
    async cancel() {
      await it?.return?.();
      await end("cancelled");
    },
  });
}
