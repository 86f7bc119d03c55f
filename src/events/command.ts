// `leadline webhooks …`: argument parsing and output only; queries in admin.ts, sending in deliver.ts.
import type { Sql } from "../db/client";
import type { Clock } from "../clock";
import { noPositional, oneId, parseArgs, positiveInt, printJson, printTable, stdio, textCell as cell, timeCell as time, type Io } from "../args";
import { UsageError } from "../errors";
import { enableEndpoint, listAttempts, listDeliveries, listEndpoints } from "./admin";
import { deliveryOptions, replayDelivery, type DeliveryOptions } from "./deliver";

export interface WebhooksCommandOptions {
  /** WEBHOOK_ALLOW_PRIVATE, for replays. */
  allowPrivate: boolean;
  /** LEADLINE_SECRET_KEY, which opens the endpoint's stored secret for replays. */
  secretKey?: Buffer | null;
  clock?: Clock;
  /** Overrides of the delivery settings (timeouts), for replays. */
  delivery?: Partial<DeliveryOptions>;
}

const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

async function list(io: Io, sql: Sql, args: string[]) {
  const { flags, positional } = parseArgs("webhooks list", args, [], ["--json"]);
  noPositional("webhooks list", positional);
  const endpoints = await listEndpoints(sql);
  if (flags.has("--json")) return printJson(io, endpoints);
  printTable(io, [
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

async function deliveries(io: Io, sql: Sql, args: string[]) {
  const { flags, positional } = parseArgs("webhooks deliveries", args, ["--endpoint", "--limit"], ["--failed", "--json"]);
  noPositional("webhooks deliveries", positional);
  const endpoint = flags.get("--endpoint");
  const limit = flags.get("--limit");
  const rows = await listDeliveries(sql, {
    endpoint: typeof endpoint === "string" ? positiveInt("webhooks deliveries", "--endpoint", endpoint) : null,
    failed: flags.has("--failed"),
    limit: typeof limit === "string" ? Math.min(positiveInt("webhooks deliveries", "--limit", limit), 10_000) : 100,
  });
  if (flags.has("--json")) return printJson(io, rows);
  printTable(io, [
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

async function attempts(io: Io, sql: Sql, args: string[]) {
  const { flags, positional } = parseArgs("webhooks attempts", args, [], ["--json"]);
  const id = oneId("webhooks attempts", "DELIVERY_ID", positional);
  const rows = await listAttempts(sql, id);
  if (rows === null) throw new Error(`delivery ${id} does not exist`);
  if (flags.has("--json")) return printJson(io, rows);
  printTable(io, [
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

async function replay(io: Io, sql: Sql, args: string[], opts: WebhooksCommandOptions): Promise<number> {
  const { flags, positional } = parseArgs("webhooks replay", args, [], ["--json"]);
  const id = oneId("webhooks replay", "DELIVERY_ID", positional);
  const clock = opts.clock ?? { now: () => Date.now() };
  const r = await replayDelivery(sql, clock, id, deliveryOptions(opts.allowPrivate, { secretKey: opts.secretKey ?? null, ...opts.delivery }));
  const o = r.outcome;
  const ok = o.status !== null && o.status >= 200 && o.status < 300;
  if (flags.has("--json")) {
    printJson(io, { delivery_id: r.delivery_id, event_id: r.event_id, attempt_id: r.attempt_id, ok, ...o });
    return ok ? 0 : 1;
  }
  if (!ok) throw new Error(`delivery ${id} replayed as attempt ${r.attempt_id} of ${r.event_id}: ${o.error}`);
  io.out(`delivery ${id} replayed as attempt ${r.attempt_id} of ${r.event_id}: HTTP ${o.status} in ${o.durationMs} ms\n`);
  return 0;
}

async function enable(io: Io, sql: Sql, args: string[]) {
  const { positional } = parseArgs("webhooks enable", args, [], []);
  const id = oneId("webhooks enable", "ID", positional);
  if (!(await enableEndpoint(sql, id))) throw new Error(`endpoint ${id} does not exist`);
  io.err(`enabled endpoint ${id}\n`);
}

export async function webhooksCommand(sql: Sql, args: string[], opts: WebhooksCommandOptions, io: Io = stdio): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "list":
      await list(io, sql, rest);
      return 0;
    case "deliveries":
      await deliveries(io, sql, rest);
      return 0;
    case "attempts":
      await attempts(io, sql, rest);
      return 0;
    case "replay":
      return replay(io, sql, rest, opts);
    case "enable":
      await enable(io, sql, rest);
      return 0;
    default:
      throw new UsageError(
        sub === undefined
          ? "usage: leadline webhooks list|deliveries|attempts|replay|enable"
          : `webhooks: unknown subcommand ${JSON.stringify(sub)}`,
      );
  }
}
