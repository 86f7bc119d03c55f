// `leadline keys …`: argument parsing and output only; the queries live in admin.ts.
import { systemClock, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { noPositional, oneId, parseArgs, positiveInt, printJson, printTable, stdio, textCell, timeCell, type Io } from "../args";
import { UsageError } from "../errors";
import { createKey, listKeys, revokeKey, rotateKey, type IssuedKey, type KeyListing } from "./admin";
import { SCOPES, isScope, type Scope } from "./keys";

function parseScopes(raw: string | true | undefined): Scope[] {
  if (typeof raw !== "string") throw new UsageError("keys create: --scopes is required (comma-separated)");
  const scopes = [...new Set(raw.split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  if (scopes.length === 0) throw new UsageError("keys create: --scopes names no scope");
  const bad = scopes.find((s) => !isScope(s));
  if (bad !== undefined) throw new UsageError(`keys: unknown scope ${JSON.stringify(bad)}; scopes are ${SCOPES.join(", ")}`);
  return scopes as Scope[];
}

/** The plaintext is printed once: a JSON object, or the key alone on stdout's last line. */
function printIssued(io: Io, issued: IssuedKey, json: boolean, verb: string) {
  if (json) {
    const { id, key, name, org_id, scopes, agent } = issued;
    printJson(io, { id, key, name, org_id, scopes, agent });
    return;
  }
  const org = issued.org_id === null ? "platform-global" : `org ${issued.org_id}`;
  const agent = issued.agent === null ? "" : `, agent ${textCell(issued.agent)}`;
  io.err(`${verb} key ${issued.id} (${org}, scopes ${issued.scopes.join(",")}${agent}); it is shown only once:\n`);
  io.out(issued.key + "\n");
}

function printListing(io: Io, keys: KeyListing[], json: boolean) {
  if (json) {
    const out = keys.map((k) => ({
      id: k.id,
      prefix: k.prefix,
      name: k.name,
      org_id: k.org_id,
      scopes: k.scopes,
      agent: k.agent,
      active: k.active,
      provisioned: k.provisioned,
      created_at: k.created_at,
      revoked_at: k.revoked_at,
      last_used_at: k.last_used_at,
    }));
    printJson(io, out);
    return;
  }
  const rows = [
    ["ID", "PREFIX", "NAME", "ORG", "SCOPES", "AGENT", "ACTIVE", "CREATED", "LAST_USED"],
    ...keys.map((k) => [
      String(k.id),
      k.prefix ?? "-", // a chosen key: none of it is stored
      textCell(k.name),
      k.org_id === null ? "-" : String(k.org_id),
      k.scopes.join(","),
      k.agent === null ? "-" : textCell(k.agent),
      k.revoked_at !== null ? "revoked" : k.active ? "yes" : "no",
      timeCell(k.created_at),
      timeCell(k.last_used_at),
    ]),
  ];
  printTable(io, rows);
}

export async function keysCommand(sql: Sql, args: string[], clock: Clock = systemClock, io: Io = stdio): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "create": {
      const { flags, positional } = parseArgs("keys create", rest, ["--scopes", "--org", "--agent", "--name"], ["--json"]);
      noPositional("keys create", positional);
      const org = flags.get("--org");
      const agent = flags.get("--agent");
      const name = flags.get("--name");
      const issued = await createKey(sql, {
        scopes: parseScopes(flags.get("--scopes")),
        org_id: typeof org === "string" ? positiveInt("keys", "--org", org) : null,
        agent: typeof agent === "string" ? agent : null,
        name: typeof name === "string" ? name : "",
      });
      printIssued(io, issued, flags.has("--json"), "created");
      return 0;
    }
    case "list": {
      const { flags, positional } = parseArgs("keys list", rest, [], ["--json"]);
      noPositional("keys list", positional);
      printListing(io, await listKeys(sql), flags.has("--json"));
      return 0;
    }
    case "revoke": {
      const { positional } = parseArgs("keys revoke", rest, [], []);
      const id = oneId("keys revoke", "ID", positional);
      await revokeKey(sql, id, new Date(clock.now()));
      io.err(`revoked key ${id}\n`);
      return 0;
    }
    case "rotate": {
      const { flags, positional } = parseArgs("keys rotate", rest, [], ["--json"]);
      const id = oneId("keys rotate", "ID", positional);
      const issued = await rotateKey(sql, id, new Date(clock.now()));
      printIssued(io, issued, flags.has("--json"), `revoked key ${id}; created`);
      return 0;
    }
    default:
      throw new UsageError(
        sub === undefined ? "usage: leadline keys create|list|revoke|rotate" : `keys: unknown subcommand ${JSON.stringify(sub)}`,
      );
  }
}
