// `leadline dnc add|remove|list --org N`: an organization's do-not-contact list from the command
// line (argument parsing and output; the list's rules live in dnc.ts). Changes are audited as the
// operator (`operator`/`cli`), with source `cli`.
import { noPositional, parseArgs, positiveInt, printJson, printTable, stdio, textCell, timeCell, type Flags, type Io } from "../args";
import { systemActor } from "../auth/actor";
import { systemClock, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";
import { addToDnc, dncAddress, DNC_NOTE_MAX, listDnc, removeFromDnc, type DncKind } from "./dnc";

export const DNC_USAGE = "usage: leadline dnc add|remove --org N (--phone P | --email E) [--note TEXT]; leadline dnc list --org N [--json]";

function orgOf(cmd: string, flags: Flags): number {
  const org = flags.get("--org");
  if (typeof org !== "string") throw new UsageError(`dnc ${cmd}: --org is required`);
  return positiveInt(`dnc ${cmd}`, "--org", org);
}

/** Exactly one of --phone and --email, as the list keeps it. */
function addressOf(cmd: string, flags: Flags): { kind: DncKind; address: string } {
  const phone = flags.get("--phone");
  const email = flags.get("--email");
  if ((phone === undefined) === (email === undefined)) throw new UsageError(`dnc ${cmd}: give one of --phone and --email`);
  const kind: DncKind = phone !== undefined ? "phone" : "email";
  const given = phone ?? email;
  const address = dncAddress(kind, given);
  if (address === null) {
    throw new UsageError(`dnc ${cmd}: ${kind === "phone" ? "--phone needs at least 10 digits" : "--email is not a valid address"}, got ${JSON.stringify(given)}`);
  }
  return { kind, address };
}

async function orgExists(sql: Sql, orgId: number): Promise<void> {
  const [row] = await sql`select 1 from orgs where id = ${orgId}`;
  if (!row) throw new Error(`organization ${orgId} does not exist`);
}

export async function dncCommand(sql: Sql, args: string[], io: Io = stdio, clock: Clock = systemClock): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "add": {
      const { flags, positional } = parseArgs("dnc add", rest, ["--org", "--phone", "--email", "--note"], []);
      noPositional("dnc add", positional);
      const orgId = orgOf("add", flags);
      const { kind, address } = addressOf("add", flags);
      const note = flags.get("--note");
      const text = typeof note === "string" ? note.replace(/\s+/g, " ").trim() : "";
      if (text.length > DNC_NOTE_MAX) throw new UsageError(`dnc add: --note is at most ${DNC_NOTE_MAX} characters`);
      await orgExists(sql, orgId);
      const added = await sql.begin((tx) => addToDnc(tx, systemActor("operator", "cli", orgId), orgId, [{ kind, address, note: text }], "cli", new Date(clock.now())));
      io.out(added.length > 0 ? `added ${kind} ${textCell(address)} to organization ${orgId}'s do-not-contact list\n` : `${kind} ${textCell(address)} was already on organization ${orgId}'s do-not-contact list\n`);
      return 0;
    }
    case "remove": {
      const { flags, positional } = parseArgs("dnc remove", rest, ["--org", "--phone", "--email"], []);
      noPositional("dnc remove", positional);
      const orgId = orgOf("remove", flags);
      const { kind, address } = addressOf("remove", flags);
      await orgExists(sql, orgId);
      const removed = await sql.begin((tx) => removeFromDnc(tx, systemActor("operator", "cli", orgId), orgId, kind, address));
      io.out(removed ? `removed ${kind} ${textCell(address)} from organization ${orgId}'s do-not-contact list\n` : `${kind} ${textCell(address)} is not on organization ${orgId}'s do-not-contact list\n`);
      return 0;
    }
    case "list": {
      const { flags, positional } = parseArgs("dnc list", rest, ["--org"], ["--json"]);
      noPositional("dnc list", positional);
      const orgId = orgOf("list", flags);
      await orgExists(sql, orgId);
      const entries = await listDnc(sql, orgId);
      if (flags.has("--json")) {
        printJson(io, entries.map((e) => ({ kind: e.kind, address: e.address, source: e.source, note: e.note, added_at: e.added_at.toISOString() })));
      } else {
        printTable(io, [["KIND", "ADDRESS", "SOURCE", "ADDED", "NOTE"], ...entries.map((e) => [e.kind, textCell(e.address), textCell(e.source), timeCell(e.added_at), e.note === "" ? "-" : textCell(e.note)])]);
      }
      return 0;
    }
    default:
      throw new UsageError(sub === undefined ? DNC_USAGE : `dnc: unknown subcommand ${JSON.stringify(sub)}; ${DNC_USAGE}`);
  }
}
