// CSV exports of the console, streamed (src/http/csv.ts: quoting, formula cells, the pulled stream).
import { csvStream } from "../http/csv";
import type { Route } from "../http/route";

export { csvCell, csvLine, csvStream } from "../http/csv";

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
