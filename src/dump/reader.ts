// The strict reader of a dump: it accepts exactly what `dump` writes (format.ts) and turns it into
// steps for `restore` to carry out, and refuses anything else with the number of the line. A dump
// is a file an attacker may have touched (a copied backup, a shared disk): executed as SQL, a line
// such as `copy (select …) to '/tmp/x'` or `create extension dblink` would write server files or
// reach other databases. So no text of the file is ever executed: a migration is recognised by its
// name and its whole text and the executable runs its own copy, tables and columns are checked
// against the catalog those migrations made, rows become bind parameters, and a sequence setting
// becomes a setval() with parameters.
import { migrations } from "../db/migrations";
import {
  COMMIT,
  COPY_END,
  copyValue,
  FIRST_LINE,
  MIGRATION_END,
  migrationLine,
  migrationText,
  PREAMBLE,
  SEQUENCES,
} from "./format";

/** A line the dump cannot hold: the restore stops before running anything of it. */
export class Refused extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
  }
}

/** The end of the input came before the dump's last line. */
export class Incomplete extends Error {}

export type Step =
  /** The header and the schema_migrations table, as this executable writes them. */
  | { kind: "preamble" }
  /** migrations[index], its text equal to this executable's, line for line. */
  | { kind: "migration"; index: number }
  /** A table's rows start (after its `disable trigger user` line naming the same table). */
  | { kind: "copy"; table: string; columns: string[] }
  | { kind: "row"; fields: (string | null)[] }
  /** `\.` and the `enable trigger user` line of the same table. */
  | { kind: "copied" }
  | { kind: "sequence"; sequence: Sequence }
  /** `commit;`: nothing may follow. */
  | { kind: "end" };

export interface Sequence {
  /** As format(%I.%I) writes it. */
  name: string;
  type: "smallint" | "integer" | "bigint";
  increment: bigint;
  min: bigint;
  max: bigint;
  start: bigint;
  cache: bigint;
  cycle: boolean;
  value: bigint;
  called: boolean;
}

/** An identifier as format(%I) writes it: bare when it may be, else double-quoted with "" inside. */
const IDENT = String.raw`(?:[a-z_][a-z0-9_$]*|"(?:[^"]|"")+")`;
const TABLE = `public\\.${IDENT}`;
const DISABLE = new RegExp(`^alter table (${TABLE}) disable trigger user;$`);
const COPY = new RegExp(`^copy (${TABLE}) \\((${IDENT}(?:, ${IDENT})*)\\) from stdin;$`);
const COLUMN = new RegExp(`${IDENT}(?:, |$)`, "y");
const INT = String.raw`(-?[0-9]{1,19})`;
const CREATE_SEQUENCE = new RegExp(
  `^create sequence if not exists (${TABLE}) as (smallint|integer|bigint) increment by ${INT} minvalue ${INT} maxvalue ${INT} start ${INT} cache ${INT} (cycle|no cycle);$`,
);
const SETVAL = new RegExp(`^select pg_catalog\\.setval\\('(${TABLE})', ${INT}, (true|false)\\);$`);

type State =
  | { at: "preamble"; next: number }
  | { at: "schema" }
  | { at: "migration"; index: number; lines: string[]; next: number }
  | { at: "copy"; table: string }
  | { at: "rows"; table: string; width: number }
  | { at: "copied"; table: string; blank: boolean }
  | { at: "sequences"; pending: Omit<Sequence, "value" | "called"> | null }
  | { at: "commit" }
  | { at: "done" };

export class DumpReader {
  private line = 0;
  private state: State = { at: "preamble", next: -1 };
  private migrated = 0;
  private tablesStarted = false;

  /** The number of the line read last. */
  get lineNumber(): number {
    return this.line;
  }

  /** Reads the next line; returns what it completes, if anything. Throws Refused. */
  next(text: string): Step | null {
    this.line++;
    const s = this.state;
    switch (s.at) {
      case "preamble":
        if (s.next === -1) {
          if (!FIRST_LINE.test(text)) throw this.refuse("not a dump written by leadline dump (its first line is not the dump's header)");
        } else if (text !== PREAMBLE[s.next]) {
          throw this.refuse(`expected the dump's header line ${JSON.stringify(PREAMBLE[s.next])}, found ${quote(text)}`);
        }
        if (++s.next < PREAMBLE.length) return null;
        this.state = { at: "schema" };
        return { kind: "preamble" };
      case "migration": {
        if (text !== s.lines[s.next]) {
          const name = migrations[s.index].name;
          throw this.refuse(
            s.next === s.lines.length - 1
              ? `expected an empty line after migration ${name}, found ${quote(text)}`
              : s.next === s.lines.length - 2
                ? `migration ${name} goes on past the end of this executable's: ${quote(text)}`
                : `migration ${name} differs from this executable's at its line ${s.next + 1}`,
          );
        }
        if (++s.next < s.lines.length) return null;
        this.migrated++;
        this.state = { at: "schema" };
        return { kind: "migration", index: s.index };
      }
      case "schema":
        return this.between(text);
      case "copy": {
        const m = COPY.exec(text);
        if (!m || m[1] !== s.table) throw this.refuse(`expected the COPY line of ${s.table}, found ${quote(text)}`);
        const columns = identifierList(m[2]);
        this.state = { at: "rows", table: s.table, width: columns.length };
        return { kind: "copy", table: s.table, columns };
      }
      case "rows": {
        if (text === COPY_END) {
          this.state = { at: "copied", table: s.table, blank: false };
          return null;
        }
        const fields = text.split("\t");
        if (fields.length !== s.width) throw this.refuse(`a row of ${s.table} has ${fields.length} fields, not ${s.width}`);
        const values = fields.map(copyValue);
        const bad = values.indexOf(undefined);
        if (bad !== -1) throw this.refuse(`field ${bad + 1} of a row of ${s.table} is not COPY text as leadline dump writes it`);
        return { kind: "row", fields: values as (string | null)[] };
      }
      case "copied":
        if (!s.blank) {
          if (text !== `alter table ${s.table} enable trigger user;`) throw this.refuse(`expected the end of the rows of ${s.table}, found ${quote(text)}`);
          s.blank = true;
          return null;
        }
        if (text !== "") throw this.refuse(`expected an empty line after the rows of ${s.table}, found ${quote(text)}`);
        this.state = { at: "schema" };
        return { kind: "copied" };
      case "sequences":
        return this.sequence(s, text);
      case "commit":
        if (text !== COMMIT) throw this.refuse(`expected ${COMMIT}, found ${quote(text)}`);
        this.state = { at: "done" };
        return { kind: "end" };
      case "done":
        throw this.refuse(`nothing may follow the dump's ${COMMIT} line, found ${quote(text)}`);
    }
  }

  /** At the end of the input: throws Incomplete unless the dump ended with its commit line. */
  end(): void {
    const s = this.state;
    if (s.at === "done") return;
    if (this.line === 0) throw new Incomplete("is empty");
    if (s.at === "rows") throw new Incomplete(`ends inside the rows of ${s.table}: the dump is incomplete`);
    throw new Incomplete(`ends before its ${COMMIT} line: the dump is incomplete`);
  }

  /** After the preamble, a migration or a table: the next migration, the next table, or the sequences. */
  private between(text: string): Step | null {
    if (text.startsWith("-- migration ")) {
      const index = this.migrated;
      const expected = migrations[index];
      if (this.tablesStarted || expected === undefined || text !== migrationLine(expected.name)) {
        const known = migrations.findIndex((m) => text === migrationLine(m.name));
        throw this.refuse(
          this.tablesStarted
            ? "a migration after the rows of a table"
            : known === -1
              ? `${quote(text.slice("-- migration ".length))} is not a migration this executable knows (it knows ${migrations.length}, up to ${migrations.at(-1)?.name}): restore with the executable that wrote the dump`
              : `migration ${migrations[known].name} out of order (expected ${expected?.name ?? "no more migrations"})`,
        );
      }
      this.state = { at: "migration", index, lines: [...migrationText(expected.sql).split("\n"), MIGRATION_END, ""], next: 0 };
      return null;
    }
    const disable = DISABLE.exec(text);
    if (disable) {
      this.tablesStarted = true;
      this.state = { at: "copy", table: disable[1] };
      return null;
    }
    if (text === SEQUENCES) {
      this.state = { at: "sequences", pending: null };
      return null;
    }
    throw this.refuse(`not a line leadline dump writes here (a migration, a table's rows or the sequences): ${quote(text)}`);
  }

  private sequence(s: Extract<State, { at: "sequences" }>, text: string): Step | null {
    if (s.pending === null) {
      if (text === "") {
        this.state = { at: "commit" };
        return null;
      }
      const m = CREATE_SEQUENCE.exec(text);
      if (!m) throw this.refuse(`expected a sequence's create line or the end of the sequences, found ${quote(text)}`);
      const [, name, type, increment, min, max, start, cache, cycle] = m;
      s.pending = { name, type: type as Sequence["type"], increment: BigInt(increment), min: BigInt(min), max: BigInt(max), start: BigInt(start), cache: BigInt(cache), cycle: cycle === "cycle" };
      return null;
    }
    const m = SETVAL.exec(text);
    if (!m || m[1] !== s.pending.name) throw this.refuse(`expected the position of sequence ${s.pending.name}, found ${quote(text)}`);
    const sequence: Sequence = { ...s.pending, value: BigInt(m[2]), called: m[3] === "true" };
    s.pending = null;
    return { kind: "sequence", sequence };
  }

  private refuse(reason: string): Refused {
    return new Refused(this.line, reason);
  }
}

/** `a, "b c", d` → its identifiers, each as written. */
function identifierList(text: string): string[] {
  const out: string[] = [];
  COLUMN.lastIndex = 0;
  while (COLUMN.lastIndex < text.length) {
    const m = COLUMN.exec(text);
    if (!m) break;
    out.push(m[0].endsWith(", ") ? m[0].slice(0, -2) : m[0]);
  }
  return out;
}

/** A line in a message: JSON-quoted (so controls show), cut to 80 characters. */
const quote = (text: string) => JSON.stringify(text.length > 80 ? text.slice(0, 80) + "…" : text);

/**
 * The lines of a stream of UTF-8 bytes, split at "\n" and nowhere else: readline also ends a line
 * at U+2028, U+2029 and U+0085 (and a lone "\r"), which COPY's text format leaves raw in a value,
 * so a visitor's UTM value holding U+2028 made a dump unrestorable. Each line is decoded on its
 * own, strictly (invalid UTF-8 is refused by its line number) and keeping a leading U+FEFF, which
 * is a value's first character, not a byte-order mark.
 */
export async function* linesOf(input: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  let line = 0;
  const decode = (bytes: Uint8Array): string => {
    line++;
    try {
      return decoder.decode(bytes);
    } catch {
      throw new Refused(line, "is not UTF-8 text");
    }
  };
  let pending: Buffer[] = [];
  for await (const chunk of input) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let end = bytes.indexOf(10, start); end !== -1; end = bytes.indexOf(10, start)) {
      const piece = bytes.subarray(start, end);
      if (pending.length > 0) {
        yield decode(Buffer.concat([...pending, piece]));
        pending = [];
      } else {
        yield decode(piece);
      }
      start = end + 1;
    }
    // Copied: a stream may reuse the chunk's memory for the next one.
    if (start < bytes.length) pending.push(Buffer.from(bytes.subarray(start)));
  }
  if (pending.length > 0) yield decode(Buffer.concat(pending));
}
