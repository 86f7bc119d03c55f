// `leadline provision [--dry-run] FILE`: generated keys go to stdout (one line each, the only time
// their plaintext is shown), the summary to stderr, so `> keys.txt` captures exactly the secrets.
// A dry run prints instead, on stdout, what a run would create and change, and writes nothing.
import { systemClock, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";
import { escapeControls, stdio, textCell, type Io } from "../args";
import { CHOSEN_KEY_MIN_LENGTH } from "../auth/keys";
import type { Change } from "./merge";
import type { Planned, PlannedKey } from "./plan";
import { applyProvisioning, type ProvisionSummary } from "./service";
import { parseProvisioning } from "./validate";

/** `secretKey`: LEADLINE_SECRET_KEY, which seals the credentials and webhook secrets written. */
export async function provisionCommand(sql: Sql, args: string[], clock: Clock = systemClock, secretKey: Buffer | null = null, io: Io = stdio): Promise<number> {
  const dryRun = args.includes("--dry-run");
  const rest = args.filter((a) => a !== "--dry-run");
  const option = rest.find((a) => a.startsWith("-") && a !== "-");
  if (option !== undefined) throw new UsageError(`provision: unknown option ${option}`);
  if (rest.length !== 1 || args.filter((a) => a === "--dry-run").length > 1) throw new UsageError("usage: leadline provision [--dry-run] FILE");
  const [path] = rest;
  let text: string;
  try {
    text = await io.readInput(path);
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const summary = await applyProvisioning(sql, parseProvisioning(text), { now: new Date(clock.now()), secretKey, dryRun });
  if (dryRun) {
    io.out(planText(summary.plan));
    io.err(summaryLine(summary) + "\n");
    return 0;
  }
  for (const k of summary.generatedKeys) {
    io.out(`key ${k.id} ${textCell(k.name)} ${k.key}\n`);
  }
  for (const k of summary.shortKeys) {
    io.err(
      `warning: api key ${k.id} ${textCell(k.name)} was chosen with ${k.length} characters;` +
        ` chosen keys should have at least ${CHOSEN_KEY_MIN_LENGTH} random characters (it keeps working: replace it)\n`,
    );
  }
  io.err(summaryLine(summary) + "\n");
  return 0;
}

/**
 * A dry run's report, object by object: `create org 1` with the fields it would hold, or
 * `update org 1` with each field that would change, `old → new`; a secret only as "(changed)".
 * Objects that would not change are not listed (the summary counts them).
 */
export function planText(plan: Planned[]): string {
  const lines: string[] = [];
  for (const o of plan) {
    if (!o.created && o.changes.length === 0) continue;
    const generated = o.section === "api_keys" && (o as PlannedKey).generate ? " (its key generated and printed by the run)" : "";
    lines.push(escapeControls(`${o.created ? "create" : "update"} ${o.what}${generated}`));
    for (const c of o.changes) lines.push(escapeControls(`  ${c.field}: ${changeText(c, o.created)}`));
  }
  return lines.length ? lines.join("\n") + "\n" : "";
}

const shown = (v: unknown) => JSON.stringify(v ?? null);

function changeText(c: Change, created: boolean): string {
  if (c.secret) return "(changed)";
  return created ? shown(c.to) : `${shown(c.from)} → ${shown(c.to)}`;
}

export function summaryLine(summary: ProvisionSummary): string {
  const words = summary.dryRun
    ? { created: "to create", updated: "to update", unchanged: "unchanged" }
    : { created: "created", updated: "updated", unchanged: "unchanged" };
  const parts = Object.entries(summary.counts).map(([section, c]) => {
    const said = (["created", "updated", "unchanged"] as const).filter((k) => c[k] > 0).map((k) => `${c[k]} ${words[k]}`);
    return `${section}: ${said.join(", ") || "none"}`;
  });
  if (summary.dryRun) {
    const keys = summary.plan.filter((o) => o.section === "api_keys" && (o as PlannedKey).generate).length;
    parts.push(`${keys} key${keys === 1 ? "" : "s"} to generate`);
    return `dry run, nothing written: ${parts.join("; ")}`;
  }
  const keys = summary.generatedKeys.length;
  parts.push(`${keys} key${keys === 1 ? "" : "s"} generated`);
  return `provisioned: ${parts.join("; ")}`;
}
