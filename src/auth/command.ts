// `leadline keys …`: argument parsing and output only; the queries live in admin.ts.
import { systemClock, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";
import { createKey, listKeys, revokeKey, rotateKey, type IssuedKey, type KeyListing } from "./admin";
import { SCOPES, isScope, type Scope } from "./keys";

type Flags = Map<string, string | true>;

/** `--flag value`, `--flag=value` and boolean `--flag`; anything else starting with `-` is an error. */
function parseArgs(args: string[], valued: string[], booleans: string[]): { flags: Flags; positional: string[] } {
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
    if (flags.has(name)) throw new UsageError(`keys: ${name} given twice`);
    if (booleans.includes(name) && eq === -1) {
      flags.set(name, true);
    } else if (valued.includes(name)) {
      const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "") throw new UsageError(`keys: ${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new UsageError(`keys: unknown option ${name}`);
    }
  }
  return { flags, positional };
}

function positiveInt(what: string, raw: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(`keys: ${what} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function parseScopes(raw: string | true | undefined): Scope[] {
  if (typeof raw !== "string") throw new UsageError("keys create: --scopes is required (comma-separated)");
  const scopes = [...new Set(raw.split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  if (scopes.length === 0) throw new UsageError("keys create: --scopes names no scope");
  const bad = scopes.find((s) => !isScope(s));
  if (bad !== undefined) throw new UsageError(`keys: unknown scope ${JSON.stringify(bad)}; scopes are ${SCOPES.join(", ")}`);
  return scopes as Scope[];
}

function noPositional(sub: string, positional: string[]) {
  if (positional.length > 0) throw new UsageError(`keys ${sub}: unexpected argument ${JSON.stringify(positional[0])}`);
}

function oneId(sub: string, positional: string[]): number {
  if (positional.length !== 1) throw new UsageError(`usage: leadline keys ${sub} ID`);
  return positiveInt("ID", positional[0]);
}

/** The plaintext is printed once: a JSON object, or the key alone on stdout's last line. */
function printIssued(issued: IssuedKey, json: boolean, verb: string) {
  if (json) {
    const { id, key, name, org_id, scopes, agent } = issued;
    process.stdout.write(JSON.stringify({ id, key, name, org_id, scopes, agent }) + "\n");
    return;
  }
  const org = issued.org_id === null ? "platform-global" : `org ${issued.org_id}`;
  const agent = issued.agent === null ? "" : `, agent ${issued.agent}`;
  process.stderr.write(`${verb} key ${issued.id} (${org}, scopes ${issued.scopes.join(",")}${agent}); it is shown only once:\n`);
  process.stdout.write(issued.key + "\n");
}

function printListing(keys: KeyListing[], json: boolean) {
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
    process.stdout.write(JSON.stringify(out) + "\n");
    return;
  }
  const time = (d: Date | null) => (d === null ? "-" : d.toISOString().replace(/\.\d{3}Z$/, "Z"));
  const rows = [
    ["ID", "PREFIX", "NAME", "ORG", "SCOPES", "AGENT", "ACTIVE", "CREATED", "LAST_USED"],
    ...keys.map((k) => [
      String(k.id),
      k.prefix,
      k.name === "" || /[\s"]/.test(k.name) ? JSON.stringify(k.name) : k.name,
      k.org_id === null ? "-" : String(k.org_id),
      k.scopes.join(","),
      k.agent ?? "-",
      k.revoked_at !== null ? "revoked" : k.active ? "yes" : "no",
      time(k.created_at),
      time(k.last_used_at),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) process.stdout.write(r.map((v, c) => v.padEnd(widths[c])).join("  ").trimEnd() + "\n");
}

export async function keysCommand(sql: Sql, args: string[], clock: Clock = systemClock): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "create": {
      const { flags, positional } = parseArgs(rest, ["--scopes", "--org", "--agent", "--name"], ["--json"]);
      noPositional("create", positional);
      const org = flags.get("--org");
      const agent = flags.get("--agent");
      const name = flags.get("--name");
      const issued = await createKey(sql, {
        scopes: parseScopes(flags.get("--scopes")),
        org_id: typeof org === "string" ? positiveInt("--org", org) : null,
        agent: typeof agent === "string" ? agent : null,
        name: typeof name === "string" ? name : "",
      });
      printIssued(issued, flags.has("--json"), "created");
      return 0;
    }
    case "list": {
      const { flags, positional } = parseArgs(rest, [], ["--json"]);
      noPositional("list", positional);
      printListing(await listKeys(sql), flags.has("--json"));
      return 0;
    }
    case "revoke": {
      const { positional } = parseArgs(rest, [], []);
      const id = oneId("revoke", positional);
      await revokeKey(sql, id, new Date(clock.now()));
      process.stderr.write(`revoked key ${id}\n`);
      return 0;
    }
    case "rotate": {
      const { flags, positional } = parseArgs(rest, [], ["--json"]);
      const id = oneId("rotate", positional);
      const issued = await rotateKey(sql, id, new Date(clock.now()));
      printIssued(issued, flags.has("--json"), `revoked key ${id}; created`);
      return 0;
    }
    default:
      throw new UsageError(
        sub === undefined ? "usage: leadline keys create|list|revoke|rotate" : `keys: unknown subcommand ${JSON.stringify(sub)}`,
      );
  }
}
