// `leadline replies …`: saved replies from the command line (argument parsing and output; the
// rules and the writes are service.ts's, as for provisioning and the console).
import { noPositional, oneId, parseArgs, positiveInt, printJson, printTable, textCell, type Io } from "../args";
import { systemActor } from "../auth/actor";
import { systemClock, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { AppError, UsageError } from "../errors";
import { createSavedReply, deleteSavedReply, listSavedReplies, REPLY_CHANNELS, type ReplyChannel, type SavedReply } from "./service";

/** The operator at the command line: the platform, acting for any organization. */
const OPERATOR = systemActor("operator", "cli", null);

function channelsOf(raw: string | true | undefined): ReplyChannel[] | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== "string") throw new UsageError("replies add: --channels needs a value");
  const list = [...new Set(raw.split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  const bad = list.find((c) => !(REPLY_CHANNELS as readonly string[]).includes(c));
  if (bad !== undefined || list.length === 0) throw new UsageError(`replies add: --channels is a comma-separated list of ${REPLY_CHANNELS.join(", ")}`);
  return list as ReplyChannel[];
}

const asJson = (r: SavedReply) => ({ id: r.id, org_id: r.org_id, name: r.name, body: r.body, subject: r.subject, channels: r.channels });

/** A refusal of the rules reads as a usage problem (exit 2), as a bad option does. */
async function ruled<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof AppError && err.code === "invalid_input") throw new UsageError(`replies: ${err.message}`);
    if (err instanceof AppError && err.code === "not_found") throw new UsageError("replies: no such saved reply or organization");
    throw err;
  }
}

export async function repliesCommand(sql: Sql, args: string[], io: Io, clock: Clock = systemClock): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "list": {
      const { flags, positional } = parseArgs("replies list", rest, ["--org", "--prefix"], ["--json"]);
      noPositional("replies list", positional);
      const org = flags.get("--org");
      const prefix = flags.get("--prefix");
      const replies = await listSavedReplies(sql, OPERATOR, typeof org === "string" ? positiveInt("replies", "--org", org) : null, {
        prefix: typeof prefix === "string" ? prefix : undefined,
        limit: 500,
      });
      if (flags.has("--json")) printJson(io, replies.map(asJson));
      else {
        printTable(io, [
          ["ID", "ORG", "NAME", "CHANNELS", "BODY"],
          ...replies.map((r) => [String(r.id), String(r.org_id), textCell(r.name), r.channels.join(","), textCell(r.body.length > 60 ? r.body.slice(0, 59) + "…" : r.body)]),
        ]);
      }
      return 0;
    }
    case "add": {
      const { flags, positional } = parseArgs("replies add", rest, ["--org", "--name", "--body", "--subject", "--channels"], ["--json"]);
      noPositional("replies add", positional);
      const org = flags.get("--org");
      const name = flags.get("--name");
      const body = flags.get("--body");
      const subject = flags.get("--subject");
      if (typeof org !== "string") throw new UsageError("replies add: --org is required");
      if (typeof name !== "string" || typeof body !== "string") throw new UsageError("replies add: --name and --body are required");
      const spec = { name, body, ...(typeof subject === "string" ? { subject } : {}), ...(flags.has("--channels") ? { channels: channelsOf(flags.get("--channels")) } : {}) };
      const r = await ruled(createSavedReply(sql, OPERATOR, positiveInt("replies", "--org", org), spec, new Date(clock.now())));
      if (!r.ok) throw new UsageError(`replies add: organization ${org} already has a saved reply named ${JSON.stringify(name.trim())}`);
      if (flags.has("--json")) printJson(io, asJson(r.reply));
      else io.out(`saved reply ${r.reply.id} ${textCell(r.reply.name)} added to org ${r.reply.org_id} (${r.reply.channels.join(",")})\n`);
      return 0;
    }
    case "remove": {
      const { positional } = parseArgs("replies remove", rest, [], []);
      const id = oneId("replies remove", "ID", positional);
      const old = await ruled(deleteSavedReply(sql, OPERATOR, id));
      io.out(`removed saved reply ${old.id} ${textCell(old.name)} of org ${old.org_id}\n`);
      return 0;
    }
    default:
      throw new UsageError(`replies: unknown subcommand ${JSON.stringify(sub ?? "")}; see leadline replies --help`);
  }
}
