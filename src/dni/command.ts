// `leadline dni report [--pool KEY] [--since YYYY-MM-DD] [--json]`: argument parsing and output
// only; the query lives in report.ts.
import type { Sql } from "../db/client";
import { noPositional, parseArgs, printJson, printTable, stdio, textCell, type Io } from "../args";
import { UsageError } from "../errors";
import { dniReport, type ReportRow } from "./report";

const USAGE = "usage: leadline dni report [--pool KEY] [--since YYYY-MM-DD] [--json]";

interface ReportArgs {
  pool: string | null;
  since: Date | null;
  json: boolean;
}

/** A calendar date as UTC midnight; the shape and the date itself are both checked. */
function parseDay(raw: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(raw);
  const day = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
  if (!day || day.toISOString().slice(0, 10) !== raw) {
    throw new UsageError(`dni report: --since must be a date YYYY-MM-DD, got ${JSON.stringify(raw)}`);
  }
  return day;
}

function parseReportArgs(args: string[]): ReportArgs {
  const { flags, positional } = parseArgs("dni report", args, ["--pool", "--since"], ["--json"]);
  noPositional("dni report", positional);
  const pool = flags.get("--pool");
  const since = flags.get("--since");
  return {
    pool: typeof pool === "string" ? pool : null,
    since: typeof since === "string" ? parseDay(since) : null,
    json: flags.has("--json"),
  };
}

/** UTM values come from visitors' URLs: textCell escapes any control characters in them. */
function printReport(io: Io, rows: ReportRow[]): void {
  const shown = (s: string) => (s === "" ? "-" : textCell(s));
  const total = (k: "visitors" | "pageviews" | "forms" | "calls") => String(rows.reduce((n, r) => n + r[k], 0));
  printTable(
    io,
    [
      ["POOL", "SOURCE", "MEDIUM", "CAMPAIGN", "VISITORS", "PAGEVIEWS", "FORMS", "CALLS"],
      ...rows.map((r) => [
        textCell(r.pool), shown(r.utm_source), shown(r.utm_medium), shown(r.utm_campaign),
        String(r.visitors), String(r.pageviews), String(r.forms), String(r.calls),
      ]),
      ["total", "", "", "", total("visitors"), total("pageviews"), total("forms"), total("calls")],
    ],
    (c) => c >= 4,
  );
}

export async function dniCommand(sql: Sql, args: string[], io: Io = stdio): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "report") {
    throw new UsageError(sub === undefined ? USAGE : `dni: unknown subcommand ${JSON.stringify(sub)}; ${USAGE}`);
  }
  const opts = parseReportArgs(rest);
  const rows = await dniReport(sql, { pool: opts.pool, since: opts.since });
  if (opts.json) {
    printJson(io, rows);
  } else if (rows.length === 0) {
    io.err("no visitors, page views, form events or calls" + (opts.pool ? ` for pool ${textCell(opts.pool)}` : "") + "\n");
  } else {
    printReport(io, rows);
  }
  return 0;
}
