// `leadline provision FILE`: generated keys go to stdout (one line each, the only time their
// plaintext is shown), the summary to stderr, so `> keys.txt` captures exactly the secrets.
import { systemClock, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";
import { stdio, textCell, type Io } from "../args";
import { CHOSEN_KEY_MIN_LENGTH } from "../auth/keys";
import { applyProvisioning, type ProvisionSummary } from "./service";
import { parseProvisioning } from "./validate";

/** `secretKey`: LEADLINE_SECRET_KEY, which seals the credentials and webhook secrets written. */
export async function provisionCommand(sql: Sql, args: string[], clock: Clock = systemClock, secretKey: Buffer | null = null, io: Io = stdio): Promise<number> {
  const option = args.find((a) => a.startsWith("-") && a !== "-");
  if (option !== undefined) throw new UsageError(`provision: unknown option ${option}`);
  if (args.length !== 1) throw new UsageError("usage: leadline provision FILE");
  const [path] = args;
  let text: string;
  try {
    text = await io.readInput(path);
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const summary = await applyProvisioning(sql, parseProvisioning(text), { now: new Date(clock.now()), secretKey });
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

export function summaryLine(summary: ProvisionSummary): string {
  const parts = Object.entries(summary.counts).map(([section, c]) => {
    const said = (["created", "updated", "unchanged"] as const).filter((k) => c[k] > 0).map((k) => `${c[k]} ${k}`);
    return `${section}: ${said.join(", ") || "none"}`;
  });
  const keys = summary.generatedKeys.length;
  parts.push(`${keys} key${keys === 1 ? "" : "s"} generated`);
  return `provisioned: ${parts.join("; ")}`;
}
