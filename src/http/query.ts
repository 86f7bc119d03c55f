// A request's query, and the `Allow` header of a set of methods: one parser and one order for every route.
import { parseQueryFromURL } from "elysia/parse-query";

/** The query of a URL, parsed as Elysia parses it (one parser for every route; a repeated name keeps its last value). */
export function queryOf(url: string): Record<string, string | undefined> {
  const q = url.indexOf("?");
  return q < 0 ? Object.create(null) : parseQueryFromURL(url, q + 1);
}

const METHOD_ORDER = ["GET", "POST", "OPTIONS"] as const;

/** `Allow` for a set of declared methods, in one order: "POST, OPTIONS". */
export const allowOf = (methods: Iterable<string>): string => {
  const set = new Set(methods);
  return METHOD_ORDER.filter((m) => set.has(m)).join(", ");
};
