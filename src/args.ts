// What the operator commands (`keys`, `webhooks`, `dni`) share: option parsing that rejects
// anything unknown, positional checks, and plain-text tables. Usage problems are UsageErrors
// (exit 2), each naming the command.
import { readFile } from "node:fs/promises";
import { UsageError } from "./errors";

/**
 * Where a command writes and reads: the process's own streams from a terminal, or a per-request
 * sink when `serve` runs the command for a CLI on its control socket (the server's stdout is its
 * log, so nothing a command prints may go there).
 */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /**
   * The text of a file the command was given, standard input for "-" (`provision FILE`). Over the
   * control socket the CLI reads it and sends it along: the server may not see the operator's
   * files (another working directory, systemd's PrivateTmp/ProtectHome) nor their terminal.
   */
  readInput(path: string): Promise<string>;
  /** Resolves once what was written so far has been taken by the reader (back-pressure for `dump`). */
  flush(): Promise<void>;
}

export const stdio: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  readInput: (path) => (path === "-" ? readStandardInput() : readFile(path, "utf8")),
  flush: () => drained(process.stdout),
};

/**
 * Standard input to its end, read from the stream rather than opened as `/dev/stdin`: when it is
 * a socket (a process manager's pipe, Bun.spawn's "pipe") opening the device path fails with ENXIO.
 */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/** Waits for a stream's buffer to empty when it is above its high-water mark. */
export function drained(stream: NodeJS.WritableStream & { writableNeedDrain?: boolean }): Promise<void> {
  return stream.writableNeedDrain ? new Promise((ok) => stream.once("drain", () => ok())) : Promise.resolve();
}

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

/**
 * Characters a terminal may act on instead of showing: C0 controls (ESC starts the sequences that
 * clear the screen, set the title, write to the clipboard), DEL, C1 controls (U+009B is CSI on its
 * own), the line and paragraph separators, and the bidirectional overrides that reorder what is
 * shown. Text that came from outside (UTM values, webhook responses, names) may hold any of them.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const HAS_CONTROL = new RegExp(CONTROL.source);

/**
 * The one escaping of CLI output: every such character as `\uXXXX`. JSON.stringify already does
 * this for C0 (as `\u001b`, `\n`…), so its output passed through here is still the same JSON.
 */
export const escapeControls = (s: string): string =>
  s.replace(CONTROL, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));

/**
 * Text in a table: JSON-quoted (controls escaped) when empty or holding white space, quotes or
 * controls, so columns still split and nothing reaches the terminal raw.
 */
export const textCell = (s: string) =>
  s === "" || /[\s"]/.test(s) || HAS_CONTROL.test(s) ? escapeControls(JSON.stringify(s)) : s;

/**
 * Rows padded into columns, two spaces apart; the first row is the header. Every cell is escaped
 * again here, so a cell a caller forgot to pass through textCell still cannot drive the terminal.
 * `right`: columns aligned right (numbers).
 */
export function printTable(io: Io, rows: string[][], right: (column: number) => boolean = () => false): void {
  const safe = rows.map((r) => r.map(escapeControls));
  const widths = safe[0].map((_, c) => Math.max(...safe.map((r) => r[c].length)));
  for (const r of safe) {
    const line = r.map((v, c) => (right(c) ? v.padStart(widths[c]) : v.padEnd(widths[c]))).join("  ");
    io.out(line.trimEnd() + "\n");
  }
}

/** One line of JSON with the characters JSON leaves raw (C1, U+2028…) escaped too; still valid JSON. */
export const safeJson = (value: unknown): string => escapeControls(JSON.stringify(value));

export const printJson = (io: Io, value: unknown) => io.out(safeJson(value) + "\n");
