// `leadline webhooks …`: argument parsing and output only; queries in admin.ts, sending in deliver.ts.
import type { Sql } from "../db/client";
import type { Clock } from "../clock";
import { UsageError } from "../errors";
import { enableEndpoint, listAttempts, listDeliveries, listEndpoints } from "./admin";
import { deliveryOptions, replayDelivery, type DeliveryOptions } from "./deliver";

export interface WebhooksCommandOptions {
  /** WEBHOOK_ALLOW_PRIVATE, for replays. */
  allowPrivate: boolean;
  clock?: Clock;
  /** Overrides of the delivery settings (timeouts), for replays. */
  delivery?: Partial<DeliveryOptions>;
}

type Flags = Map<string, string | true>;

function parseArgs(sub: string, args: string[], valued: string[], booleans: string[]): { flags: Flags; positional: string[] } {
  const flags: Flags = new Map();
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith("-") || arg === "-") {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (flags.has(name)) throw new UsageError(`webhooks ${sub}: ${name} given twice`);
    if (booleans.includes(name) && eq === -1) {
      flags.set(name, true);
    } else if (valued.includes(name)) {
      const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "") throw new UsageError(`webhooks ${sub}: ${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new UsageError(`webhooks ${sub}: unknown option ${name}`);
    }
  }
  return { flags, positional };
}

function positiveInt(sub: string, what: string, raw: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(`webhooks ${sub}: ${what} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function oneId(sub: string, what: string, positional: string[]): number {
  if (positional.length !== 1) throw new UsageError(`usage: leadline webhooks ${sub} ${what}`);
  return positiveInt(sub, what, positional[0]);
}

function noPositional(sub: string, positional: string[]) {
  if (positional.length > 0) throw new UsageError(`webhooks ${sub}: unexpected argument ${JSON.stringify(positional[0])}`);
}

const time = (d: Date | null) => (d === null ? "-" : d.toISOString().replace(/\.\d{3}Z$/, "Z"));
const cell = (s: string) => (s === "" || /[\s"]/.test(s) ? JSON.stringify(s) : s);
const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

function printTable(rows: string[][]) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) process.stdout.write(r.map((v, c) => v.padEnd(widths[c])).join("  ").trimEnd() + "\n");
}

const printJson = (value: unknown) => process.stdout.write(JSON.stringify(value) + "\n");

async function list(sql: Sql, args: string[]) {
  const { flags, positional } = parseArgs("list", args, [], ["--json"]);
  noPositional("list", positional);
  const endpoints = await listEndpoints(sql);
  if (flags.has("--json")) return printJson(endpoints);
  printTable([
    ["ID", "ORG", "URL", "EVENTS", "STATE", "PENDING", "FAILED", "LAST_DELIVERED"],
    ...endpoints.map((e) => [
      String(e.id),
      e.org_id === null ? "house" : String(e.org_id),
      e.url,
      e.events.join(",") || "-",
      e.disabled_at ? `disabled (${e.disabled_reason ?? "410"})` : e.active ? "active" : "inactive",
      String(e.pending),
      String(e.failed),
      time(e.last_delivered_at),
    ]),
  ]);
}

async function deliveries(sql: Sql, args: string[]) {
  const { flags, positional } = parseArgs("deliveries", args, ["--endpoint", "--limit"], ["--failed", "--json"]);
  noPositional("deliveries", positional);
  const endpoint = flags.get("--endpoint");
  const limit = flags.get("--limit");
  const rows = await listDeliveries(sql, {
    endpoint: typeof endpoint === "string" ? positiveInt("deliveries", "--endpoint", endpoint) : null,
    failed: flags.has("--failed"),
    limit: typeof limit === "string" ? Math.min(positiveInt("deliveries", "--limit", limit), 10_000) : 100,
  });
  if (flags.has("--json")) return printJson(rows);
  printTable([
    ["ID", "ENDPOINT", "EVENT", "TYPE", "STATUS", "ATTEMPTS", "LAST", "NEXT_ATTEMPT", "CREATED"],
    ...rows.map((d) => [
      String(d.id),
      String(d.endpoint),
      `evt_${d.event_id}`,
      d.type,
      d.status,
      d.tries === d.attempts ? String(d.attempts) : `${d.attempts}+${d.tries - d.attempts}`,
      d.last_error ? cell(cut(d.last_error, 60)) : d.last_status === null ? "-" : String(d.last_status),
      time(d.next_attempt_at),
      time(d.created_at),
    ]),
  ]);
}

async function attempts(sql: Sql, args: string[]) {
  const { flags, positional } = parseArgs("attempts", args, [], ["--json"]);
  const id = oneId("attempts", "DELIVERY_ID", positional);
  const rows = await listAttempts(sql, id);
  if (rows === null) throw new Error(`delivery ${id} does not exist`);
  if (flags.has("--json")) return printJson(rows);
  printTable([
    ["ATTEMPT", "TRIGGER", "STARTED", "MS", "ADDRESS", "STATUS", "ERROR", "RESPONSE"],
    ...rows.map((a) => [
      String(a.id),
      a.trigger,
      time(a.started_at),
      a.duration_ms === null ? "-" : String(a.duration_ms),
      a.address ?? "-",
      a.status === null ? "-" : String(a.status),
      a.error === null ? "-" : cell(cut(a.error, 80)),
      a.response === null ? "-" : cell(cut(a.response.replace(/\s+/g, " "), 60)),
    ]),
  ]);
}

async function replay(sql: Sql, args: string[], opts: WebhooksCommandOptions): Promise<number> {
  const { flags, positional } = parseArgs("replay", args, [], ["--json"]);
  const id = oneId("replay", "DELIVERY_ID", positional);
  const clock = opts.clock ?? { now: () => Date.now() };
  const r = await replayDelivery(sql, clock, id, deliveryOptions(opts.allowPrivate, opts.delivery));
  const o = r.outcome;
  const ok = o.status !== null && o.status >= 200 && o.status < 300;
  if (flags.has("--json")) {
    printJson({ delivery_id: r.delivery_id, event_id: r.event_id, attempt_id: r.attempt_id, ok, ...o });
    return ok ? 0 : 1;
  }
  if (!ok) throw new Error(`delivery ${id} replayed as attempt ${r.attempt_id} of ${r.event_id}: ${o.error}`);
  process.stdout.write(`delivery ${id} replayed as attempt ${r.attempt_id} of ${r.event_id}: HTTP ${o.status} in ${o.durationMs} ms\n`);
  return 0;
}

async function enable(sql: Sql, args: string[]) {
  const { positional } = parseArgs("enable", args, [], []);
  const id = oneId("enable", "ID", positional);
  if (!(await enableEndpoint(sql, id))) throw new Error(`endpoint ${id} does not exist`);
  process.stderr.write(`enabled endpoint ${id}\n`);
}

export async function webhooksCommand(sql: Sql, args: string[], opts: WebhooksCommandOptions): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "list":
      await list(sql, rest);
      return 0;
    case "deliveries":
      await deliveries(sql, rest);
      return 0;
    case "attempts":
      await attempts(sql, rest);
      return 0;
    case "replay":
      return replay(sql, rest, opts);
    case "enable":
      await enable(sql, rest);
      return 0;
    default:
      throw new UsageError(
        sub === undefined
          ? "usage: leadline webhooks list|deliveries|attempts|replay|enable"
          : `webhooks: unknown subcommand ${JSON.stringify(sub)}`,
      );
  }
}
