// CSV exports of the console, streamed (src/http/csv.ts: quoting, formula cells, the pulled stream).
import { csvStream, type CsvEnd } from "../http/csv";
import type { Answer } from "../http/route";

export { csvCell, csvLine, csvStream, type CsvEnd, type CsvOutcome } from "../http/csv";

/** A streamed CSV download named `filename`; `onEnd` as csvStream's. */
export function csvResponse<T>(
  filename: string,
  header: readonly string[],
  rows: AsyncIterable<T[]>,
  cells: (row: T) => readonly unknown[],
  onEnd?: CsvEnd,
): Response {
  return new Response(csvStream(header, rows, cells, onEnd), {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${filename}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}

/** A CSV export's answer, beside every page's. */
export const csvAnswer = (description: string): Record<number, Answer> => ({ 200: { description, contentType: "text/csv" } });
