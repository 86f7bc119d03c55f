// What the operator commands (`keys`, `webhooks`, `dni`) share: option parsing that rejects
// anything unknown, positional checks, and plain-text tables. Usage problems are UsageErrors
// (exit 2), each naming the command.
import { UsageError } from "./errors";

export type Flags = Map<string, string | true>;

/**
 * `--flag value`, `--flag=value` and boolean `--flag`; anything else starting with `-` is an
 * error. `cmd` names the command in messages ("keys", "webhooks deliveries").
 */
export function parseArgs(cmd: string, args: string[], valued: string[], booleans: string[]): { flags: Flags; positional: string[] } {
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
    if (flags.has(name)) throw new UsageError(`${cmd}: ${name} given twice`);
    if (booleans.includes(name) && eq === -1) {
      flags.set(name, true);
    } else if (valued.includes(name)) {
      const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "") throw new UsageError(`${cmd}: ${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new UsageError(`${cmd}: unknown option ${name}`);
    }
  }
  return { flags, positional };
}

export function positiveInt(cmd: string, what: string, raw: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(`${cmd}: ${what} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** The one positional argument, a positive integer id (`usage: leadline <cmd> <what>` otherwise). */
export function oneId(cmd: string, what: string, positional: string[]): number {
  if (positional.length !== 1) throw new UsageError(`usage: leadline ${cmd} ${what}`);
  return positiveInt(cmd, what, positional[0]);
}

export function noPositional(cmd: string, positional: string[]): void {
  if (positional.length > 0) throw new UsageError(`${cmd}: unexpected argument ${JSON.stringify(positional[0])}`);
}

/** A time in a table: ISO-8601 to the second, "-" for none. */
export const timeCell = (d: Date | null) => (d === null ? "-" : d.toISOString().replace(/\.\d{3}Z$/, "Z"));

/** Text in a table: JSON-quoted when empty or holding white space or quotes, so columns still split. */
export const textCell = (s: string) => (s === "" || /[\s"]/.test(s) ? JSON.stringify(s) : s);

/** Rows padded into columns, two spaces apart; the first row is the header. */
export function printTable(rows: string[][]): void {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) process.stdout.write(r.map((v, c) => v.padEnd(widths[c])).join("  ").trimEnd() + "\n");
}

export const printJson = (value: unknown) => process.stdout.write(JSON.stringify(value) + "\n");
