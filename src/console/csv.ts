// CSV for spreadsheets (RFC 4180 quoting), safe to open: a cell that a spreadsheet would read as
// a formula (starting with =, +, -, @, a tab or a carriage return) is prefixed with a single quote,
// so a caller's phone field of `=HYPERLINK(…)` stays text. Numbers are written as numbers.

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "";
  let s = v instanceof Date ? v.toISOString() : String(v);
  if (FORMULA_START.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvLine = (cells: unknown[]): string => cells.map(csvCell).join(",") + "\r\n";

/**
 * A streamed CSV answer: the header line, then each batch of rows as the generator yields it, so
 * memory holds one batch whatever the number of rows.
 */
export function csvResponse<T>(filename: string, header: string[], rows: AsyncIterable<T[]>, line: (row: T) => unknown[]): Response {
  const enc = new TextEncoder();
  const it = rows[Symbol.asyncIterator]();
  let headerSent = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(enc.encode(csvLine(header)));
        return;
      }
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(enc.encode(next.value.map((r) => csvLine(line(r))).join("")));
    },
    async cancel() {
      await it.return?.(undefined);
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${filename}"`,
      "cache-control": "no-store",
    },
  });
}
