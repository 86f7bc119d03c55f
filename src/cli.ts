// Subcommands of the executable. Each returns an exit status; errors print one line to stderr.
import { loadConfig, type Config } from "./config";
import { openDatabase, type Database } from "./db/open";
import { migrate } from "./db/migrate";
import { randomBytes } from "node:crypto";
import { closeSync, createWriteStream, fsyncSync, openSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { drained, stdio, type Io } from "./args";
import { relayCommand, type Relay } from "./control/client";
import { SOCKET_COMMANDS, reportError, runCommand } from "./control/commands";
import { findSocketPath } from "./control/path";
import { UsageError } from "./errors";
import { copyLogTo, setLogLevel } from "./log";
import { VERSION } from "./version";

export const USAGE = `leadline ${VERSION} — lead management and outreach backend

usage: leadline [command] [options]

commands:
  serve [--demo]             apply pending migrations, start workers, listen on HOST:PORT (default);
                             --demo: provision the demo first when the database is empty
  migrate                    apply pending migrations and exit
  provision [--dry-run] FILE apply a provisioning file (JSON) idempotently; prints generated keys;
                             --dry-run: print what it would create and change, write nothing
  keys create --scopes a,b [--org N] [--agent USER] [--name TEXT] [--json]
                             print a new API key once (no --org: platform-global)
  keys list [--json]         list keys (never plaintext)
  keys revoke ID             revoke a key
  keys rotate ID [--json]    issue a replacement key with the same grants and revoke the old one
  users create --email E --role admin|manager|agent [--org N] [--id USER] [--name TEXT] [--json]
                             a console user; prints a one-time link to set the password
  users invite --email E     print a new one-time link to set the password (72 hours; older ones stop)
  users passwd --email E     set the password read from standard input; ends the user's sessions
  users revoke-sessions --email E
                             sign the user out everywhere
  users disable --email E    the user can no longer sign in; revokes the API keys bound to the user
  users totp-off --email E   turn the user's two-step sign-in off (a lost phone); ends their sessions
  users list [--json]        console users, their roles and open sessions
  webhooks list [--json]     list webhook endpoints with their state and pending/failed deliveries
  webhooks deliveries [--endpoint ID] [--failed] [--limit N] [--json]
                             list deliveries, newest first
  webhooks attempts DELIVERY_ID [--json]
                             every attempt of a delivery: time, address, status, error, response
  webhooks replay DELIVERY_ID [--json]
                             send a delivery again now, as a new attempt of the same event id
  webhooks enable ID         enable an endpoint disabled by a 410 response
  replies list [--org N] [--prefix P] [--json]
                             saved replies (the composer's / picker), by organization and name
  replies add --org N --name NAME --body TEXT [--subject S] [--channels sms,email,note] [--json]
                             a saved reply; merge fields such as {first_name} are filled when sent
  replies remove ID          delete a saved reply
  secrets rotate             re-seal stored provider credentials and webhook secrets under
                             LEADLINE_SECRET_KEY (the previous key in LEADLINE_SECRET_KEY_OLD)
  secrets status             how many stored secrets are in clear and under which key
  dni report [--pool KEY] [--since YYYY-MM-DD] [--json]
                             visitors, page views, form events and calls per pool and UTM source/medium/campaign
  dnc add --org N (--phone P | --email E) [--note TEXT]
                             put a phone or email on an organization's do-not-contact list (audited)
  dnc remove --org N (--phone P | --email E)
                             take it off again (audited)
  dnc list --org N [--json]  the organization's do-not-contact list, newest first
  dump [FILE]                a plain SQL dump of the whole database (stdout, or FILE created 0600),
                             for psql into an empty PostgreSQL 14+; works while serve runs
  restore FILE               load such a dump into an empty database (a new DATA_DIR, or DATABASE_URL)
  version                    print the version
  --help                     this text

scopes: leads:read leads:write conversations:read messages:write cti metrics:write calls:write
environment: DATABASE_URL DATA_DIR PORT HOST BASE_URL COMMS_INBOUND_LIST_ID NPK_IP_SALT
             TRUST_PROXY LOG_LEVEL WEBHOOK_ALLOW_PRIVATE DB_POOL_MAX DNI_CACHE_SIZE
             DNI_MAX_HOLDS_PER_ADDRESS DNI_VISITOR_RETENTION_DAYS DNI_EVENT_RETENTION_DAYS
             BODY_DEADLINE_MS REQUEST_DEADLINE_MS LEADLINE_SECRET_KEY LEADLINE_SECRET_KEY_OLD
             XDG_RUNTIME_DIR
             (see docs/operations.md, Configuration)
`;

/**
 * `--help` (or `-h`) anywhere after a command prints that command's usage with an example and
 * does nothing else: `leadline keys create --help` must never create a key, nor `serve --help`
 * start a server. Keyed by the command words; the longest match wins.
 */
const HELP: Record<string, string> = {
  serve: `usage: leadline serve [--demo]
Applies pending migrations (under an advisory lock), starts the background workers and listens on
HOST:PORT until SIGTERM or SIGINT, then drains and exits 0. No command at all means serve.
--demo: when the database has no organization at all, first provisions the demo (deploy/demo.json,
built into the executable: public demo keys, SMS, email and webhooks taken by sinks inside the
process) and prints its keys and the pages to open; on a database with data it does nothing.
example: PORT=8080 DATABASE_URL=postgres://leadline@127.0.0.1/leadline leadline serve
example: make run   (./dist/leadline serve --demo on ./leadline-data)
`,
  migrate: `usage: leadline migrate
Applies pending migrations and exits, saying how many it applied.
example: DATABASE_URL=postgres://leadline@127.0.0.1/leadline leadline migrate
`,
  provision: `usage: leadline provision [--dry-run] FILE
Applies a provisioning file (JSON; - reads standard input) idempotently: every object is upserted
by its id, nothing absent is deleted. Within an object that exists, a field left out keeps its
stored value (a change made in the console survives an older file), a field given replaces it,
null clears a field that may be empty. Prints "key <id> <name> <plaintext>" once per generated key.
--dry-run: checks the file and prints, object by object, what a run would create and change
(field: old → new; secrets as "(changed)"), and writes nothing.
example: leadline provision --dry-run deploy/provision.example.json
example: leadline provision deploy/provision.example.json
`,
  keys: `usage: leadline keys create|list|revoke|rotate ...
  keys create --scopes a,b [--org N] [--agent USER] [--name TEXT] [--json]
  keys list [--json]
  keys revoke ID
  keys rotate ID [--json]
example: leadline keys create --scopes leads:write,leads:read --org 1 --name "site form"
`,
  "keys create": `usage: leadline keys create --scopes a,b [--org N] [--agent USER] [--name TEXT] [--json]
Prints a new API key once (the key alone on the last line; --json: {id, key, name, org_id, scopes,
agent}). No --org means platform-global. Scopes: leads:read leads:write conversations:read
messages:write cti metrics:write calls:write.
example: leadline keys create --scopes cti --org 1 --agent agent7 --name "desk 7"
`,
  "keys list": `usage: leadline keys list [--json]
Lists keys with their grants and last use; never a plaintext key.
example: leadline keys list --json
`,
  "keys revoke": `usage: leadline keys revoke ID
Revokes a key; every instance refuses it within a second.
example: leadline keys revoke 12
`,
  "keys rotate": `usage: leadline keys rotate ID [--json]
Issues a replacement key with the same grants (printed once) and revokes the old one.
example: leadline keys rotate 12
`,
  users: `usage: leadline users create|invite|passwd|revoke-sessions|totp-off|disable|list ...
  users create --email E --role admin|manager|agent [--org N] [--id USER] [--name TEXT] [--json]
  users invite --email E [--json]
  users passwd --email E          (the password on standard input)
  users revoke-sessions --email E
  users totp-off --email E
  users disable --email E
  users list [--json]
example: leadline users create --email ana@example.com --role manager --org 1
`,
  "users create": `usage: leadline users create --email E --role admin|manager|agent [--org N] [--id USER] [--name TEXT] [--json]
Creates a console user and prints a link that sets the password (once, within 72 hours). A manager
or agent belongs to one organization (--org); an admin to every one. --id is the user's name for
CTI dials and keys (default: the email's local part); an existing CTI user of that id gets the email.
example: leadline users create --email ana@example.com --role agent --org 1 --id agent7
`,
  "users invite": `usage: leadline users invite --email E [--json]
Prints a new one-time link for the user to set a password (72 hours); the user's older links stop
working. Opened, the link is spent: its form then works half an hour in that browser.
example: leadline users invite --email ana@example.com
`,
  "users passwd": `usage: leadline users passwd --email E
Sets the user's password to the first line of standard input (at least 12 characters) and ends
every session of the user.
example: printf '%s\n' 'a long pass phrase' | leadline users passwd --email ana@example.com
`,
  "users revoke-sessions": `usage: leadline users revoke-sessions --email E
Ends every session of the user: each browser is signed out at its next request.
example: leadline users revoke-sessions --email ana@example.com
`,
  "users totp-off": `usage: leadline users totp-off --email E
Turns the user's two-step sign-in off (they lost the phone with the authenticator app) and ends
every session of the user; they sign in with their password and may set it up again.
example: leadline users totp-off --email ana@example.com
`,
  "users disable": `usage: leadline users disable --email E
The user can no longer sign in (their CTI dials stay); ends their sessions and revokes every API
key bound to the user (revocation is final: a returning user gets new keys), printing their ids.
example: leadline users disable --email ana@example.com
`,
  "users list": `usage: leadline users list [--json]
Lists console users with their role, organization, whether a password is set and open sessions.
example: leadline users list
`,
  webhooks: `usage: leadline webhooks list|deliveries|attempts|replay|enable ...
  webhooks list [--json]
  webhooks deliveries [--endpoint ID] [--failed] [--limit N] [--json]
  webhooks attempts DELIVERY_ID [--json]
  webhooks replay DELIVERY_ID [--json]
  webhooks enable ID
example: leadline webhooks deliveries --failed --limit 20
`,
  "webhooks list": `usage: leadline webhooks list [--json]
Lists webhook endpoints with their state and pending/failed deliveries.
example: leadline webhooks list
`,
  "webhooks deliveries": `usage: leadline webhooks deliveries [--endpoint ID] [--failed] [--limit N] [--json]
Lists deliveries, newest first.
example: leadline webhooks deliveries --endpoint 1 --failed
`,
  "webhooks attempts": `usage: leadline webhooks attempts DELIVERY_ID [--json]
Every attempt of a delivery: time, address, status, error, response.
example: leadline webhooks attempts 42
`,
  "webhooks replay": `usage: leadline webhooks replay DELIVERY_ID [--json]
Sends a delivery again now, as a new attempt of the same event id.
example: leadline webhooks replay 42
`,
  "webhooks enable": `usage: leadline webhooks enable ID
Enables an endpoint that a 410 response disabled.
example: leadline webhooks enable 1
`,
  dni: `usage: leadline dni report [--pool KEY] [--since YYYY-MM-DD] [--json]
example: leadline dni report --pool acme-site --since 2026-11-01
`,
  "dni report": `usage: leadline dni report [--pool KEY] [--since YYYY-MM-DD] [--json]
Visitors, page views, form events and attributed calls per pool and first-touch source/medium/campaign.
example: leadline dni report --pool acme-site --since 2026-11-01
`,
  replies: `usage: leadline replies list|add|remove ...
  replies list [--org N] [--prefix P] [--json]
  replies add --org N --name NAME --body TEXT [--subject S] [--channels sms,email,note] [--json]
  replies remove ID
example: leadline replies add --org 1 --name hours --body "Hi {first_name}, we are open 8-6, Mon-Sat."
`,
  "replies list": `usage: leadline replies list [--org N] [--prefix P] [--json]
Lists saved replies (every organization's without --org), by organization and name; --prefix keeps
those whose name starts with P (any case), as the composer's / picker does.
example: leadline replies list --org 1 --json
`,
  "replies add": `usage: leadline replies add --org N --name NAME --body TEXT [--subject S] [--channels sms,email,note] [--json]
Adds a saved reply to an organization. NAME (up to 60 characters) is unique in the organization
regardless of case; agents pick it by typing / and its start. BODY (and an email's SUBJECT) may hold
the lead's merge fields {first_name} {last_name} {full_name} {company} {phone} {email} {city}
{state} {postal_code}, filled when the message is sent; any other {name} is refused. --channels:
where it may be used (default all three). Audited.
example: leadline replies add --org 1 --name "missed call" --channels sms --body "Hi {first_name}, sorry we missed you!"
`,
  "replies remove": `usage: leadline replies remove ID
Deletes a saved reply (audited with what it held).
example: leadline replies remove 12
`,
  dnc: `usage: leadline dnc add|remove|list ...
  dnc add --org N (--phone P | --email E) [--note TEXT]
  dnc remove --org N (--phone P | --email E)
  dnc list --org N [--json]
example: leadline dnc add --org 1 --phone "(512) 555-0100" --note "asked on a call, 2026-11-30"
`,
  "dnc add": `usage: leadline dnc add --org N (--phone P | --email E) [--note TEXT]
Puts a phone (its last 10 digits) or an email (lowercased) on the organization's do-not-contact
list, source "cli", audited. Sends to it are then refused (do_not_contact), the hopper never takes
the phone, and cti_queue.php hands its dials out marked dnc: true. An address already listed keeps
its first entry.
example: leadline dnc add --org 1 --email dana@example.com --note "wrote in to ask"
`,
  "dnc remove": `usage: leadline dnc remove --org N (--phone P | --email E)
Takes a phone or email off the organization's do-not-contact list, audited. (An opt-out by the
person, STOP or an unsubscribe link, is not on this list: it is the lead's consent.)
example: leadline dnc remove --org 1 --phone 5125550100
`,
  "dnc list": `usage: leadline dnc list --org N [--json]
The organization's do-not-contact list, newest first: kind, address, source, time, note.
example: leadline dnc list --org 1 --json
`,
  secrets: `usage: leadline secrets rotate|status
  secrets rotate    re-seal every stored secret under LEADLINE_SECRET_KEY
  secrets status    how many stored secrets are in clear and under each key id
example: LEADLINE_SECRET_KEY=$(openssl rand -base64 32) leadline secrets rotate
`,
  "secrets rotate": `usage: leadline secrets rotate
Re-seals every stored secret (orgs' sms.auth_token and email.smtp_url, webhook endpoints' secret)
under LEADLINE_SECRET_KEY, in one transaction. Values sealed with the previous key are opened with
LEADLINE_SECRET_KEY_OLD; values stored in clear are sealed (so the first rotate after setting a key
needs no old key). Nothing changes when one value opens with neither key; running it again changes
nothing. Stop serve first (or restart it right after): a server started with the old key cannot
open what is re-sealed under the new one.
example: LEADLINE_SECRET_KEY_OLD=<old key> LEADLINE_SECRET_KEY=<new key> leadline secrets rotate
`,
  "secrets status": `usage: leadline secrets status
How many stored secrets are in clear and how many are sealed under each key id (8 hex digits of
the key's SHA-256); never prints a secret.
example: leadline secrets status
`,
  dump: `usage: leadline dump [FILE]
Writes a plain SQL dump of the whole database (the schema as the migrations make it, every table's
rows, every sequence's position) to standard output, or to FILE (written to a new 0600 file beside
it, then renamed over it: it holds key hashes and stored secrets; FILE is left as it was if the
dump fails). Read in one consistent snapshot, so it can run
while serve runs (on the embedded database serve itself takes it, over its control socket). Load it
into an EMPTY PostgreSQL 14+ database with psql, then serve with DATABASE_URL naming it.
example: leadline dump /var/backups/leadline.sql && psql -v ON_ERROR_STOP=1 -f /var/backups/leadline.sql postgres://leadline@db/leadline
`,
  restore: `usage: leadline restore FILE
Loads a dump written by leadline dump (- reads standard input) into an EMPTY database, in one
transaction: a new DATA_DIR (the move back from PostgreSQL, or a restore of a backup), or the
database DATABASE_URL names (psql -v ON_ERROR_STOP=1 -f FILE does the same there). Refused when
the database has any table; run it before the first serve, which would create the schema. Only
what leadline dump writes is accepted and no text of the file is run as SQL: any other line is
refused with its number and the transaction rolled back, so nothing is written (docs/backups.md).
example: DATA_DIR=/var/lib/leadline/data leadline restore /var/backups/leadline.sql
`,
  version: `usage: leadline version
Prints the version.
`,
};

/** The usage text for the command words before a --help, or null when they name no command. */
export function helpFor(argv: string[]): string | null {
  const words = argv.filter((a) => !a.startsWith("-"));
  for (let n = Math.min(2, words.length); n >= 1; n--) {
    const text = HELP[words.slice(0, n).join(" ")];
    if (text) return text;
  }
  return words.length === 0 ? USAGE : null;
}

/** Commands that take no arguments refuse any, rather than ignoring them. */
function noArguments(cmd: string, rest: string[]): void {
  if (rest.length > 0) throw new UsageError(`${cmd}: unexpected argument ${JSON.stringify(rest[0])}; see leadline ${cmd} --help`);
}

async function withDb<T>(config: Config, fn: (db: Database) => Promise<T>, migrating = true): Promise<T> {
  const db = await openDatabase(config, "cli", { empty: !migrating });
  try {
    if (migrating) await migrate(db.sql);
    return await fn(db);
  } finally {
    await db.close();
  }
}

export async function runCli(argv: string[]): Promise<number> {
  const [cmd = "serve", ...rest] = argv;
  try {
    if (cmd === "help" || argv.includes("--help") || argv.includes("-h")) {
      const text = helpFor(cmd === "help" ? rest : argv);
      if (text === null) throw new UsageError(`unknown command ${JSON.stringify(cmd)}; see leadline --help`);
      process.stdout.write(text);
      return 0;
    }
    if (cmd === "version" || cmd === "--version") {
      noArguments("version", rest);
      process.stdout.write(VERSION + "\n");
      return 0;
    }
    const config = loadConfig();
    setLogLevel(config.logLevel);
    if (config.logCopyFile) copyLogTo(config.logCopyFile);
    switch (cmd) {
      case "serve": {
        const demo = rest[0] === "--demo";
        noArguments("serve", demo ? rest.slice(1) : rest);
        const { serve } = await import("./app/server");
        return await serve(config, { demo });
      }
      case "migrate": {
        noArguments("migrate", rest);
        const db = await openDatabase(config, "cli");
        try {
          const applied = await migrate(db.sql);
          if (db.createdFromImage) process.stdout.write(`created the database from this executable's image, at migration ${db.createdFromImage}\n`);
          process.stdout.write(applied.length === 0 ? "no migrations to apply: the database is up to date\n" : `applied ${applied.length} migration${applied.length === 1 ? "" : "s"}: ${applied.join(", ")}\n`);
          return 0;
        } finally {
          await db.close();
        }
      }
      case "provision":
      case "keys":
      case "users":
      case "webhooks":
      case "replies":
      case "secrets":
      case "dni":
      case "dnc":
      case "dump":
        return await operatorCommand(config, argv);
      case "restore": {
        if (rest.length !== 1 || (rest[0].startsWith("-") && rest[0] !== "-")) throw new UsageError("usage: leadline restore FILE");
        const { restoreDump } = await import("./dump/restore");
        // Not migrated first: the database must be empty, and the dump brings its own schema.
        const rows = await withDb(config, (db) => restoreDump(db.sql, rest[0]), false);
        process.stderr.write(`restored ${rows} rows from ${rest[0]}\n`);
        return 0;
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(cmd)}; see leadline --help`);
    }
  } catch (err) {
    return reportError(err, stdio);
  }
}

/**
 * A command on the database. On the embedded database while `serve` holds it, the command is
 * handed to that process over its control socket (src/control/); otherwise this process opens the
 * database itself. `dump FILE`'s file is written here either way, never by the server.
 */
async function operatorCommand(config: Config, argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  let command = argv;
  let target: OutputTarget = terminal;
  if (cmd === "dump") {
    if (rest.length > 1 || (rest[0]?.startsWith("-") && rest[0] !== "-")) throw new UsageError("usage: leadline dump [FILE]");
    if (rest.length === 1 && rest[0] !== "-") target = outputFile(rest[0]);
    command = ["dump"];
  }
  try {
    const path = !config.databaseUrl && SOCKET_COMMANDS.has(cmd) ? findSocketPath(config) : null;
    if (path !== null) {
      // What the command reads is read here, where the operator is: provision's file, passwd's standard input.
      const file = cmd === "provision" ? rest.filter((a) => a !== "--dry-run") : [];
      const input = file.length === 1 ? await readLocally(file[0]) : cmd === "users" && rest[0] === "passwd" ? await readLocally("-") : undefined;
      const status = await relayCommand(path, { argv: command, input }, target.relay);
      if (status !== null) return await target.finish(status);
    }
    const status = await withDb(config, (db) => runCommand(db.sql, config, command, target.io), cmd !== "dump");
    return await target.finish(status);
  } catch (err) {
    await target.finish(1);
    throw err;
  }
}

/** The file or standard input `provision` reads, read by the CLI for the server (see Io.readInput). */
async function readLocally(path: string): Promise<{ path: string; text?: string; error?: string }> {
  try {
    return { path, text: await stdio.readInput(path) };
  } catch (err) {
    return { path, error: (err as NodeJS.ErrnoException).code ?? String(err) };
  }
}

interface OutputTarget {
  io: Io;
  relay: Relay;
  /** Closes the file (put in place only when the command succeeded: a partial dump is never left to be loaded). */
  finish(status: number): Promise<number>;
}

const terminal: OutputTarget = {
  io: stdio,
  relay: { out: (text) => process.stdout.write(text), err: (text) => void process.stderr.write(text), drain: () => drained(process.stdout) },
  finish: async (status) => status,
};

/**
 * `dump FILE`: written to a new file beside FILE, created 0600 with O_EXCL (it holds key hashes and
 * stored secrets), synced, then renamed over FILE. Writing FILE in place would keep the mode of a
 * file that already exists (0644 stayed 0644), and a failed dump would have destroyed the previous
 * one; now FILE is either the old file or the whole new dump, never readable by others.
 */
function outputFile(path: string): OutputTarget {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  let fd: number;
  try {
    fd = openSync(temporary, "wx", 0o600);
  } catch (err) {
    throw new Error(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const stream = createWriteStream("", { fd, autoClose: false });
  let finished: Promise<number> | undefined;
  const settle = async (status: number): Promise<number> => {
    try {
      await new Promise<void>((ok, fail) => stream.end((err?: Error | null) => (err ? fail(err) : ok())));
      if (status === 0) fsyncSync(fd);
    } finally {
      closeSync(fd);
      if (status !== 0) rmSync(temporary, { force: true });
    }
    if (status === 0) {
      try {
        renameSync(temporary, path);
      } catch (err) {
        rmSync(temporary, { force: true });
        throw new Error(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
    }
    return status;
  };
  return {
    io: { ...stdio, out: (text) => void stream.write(text), flush: () => drained(stream) },
    relay: { out: (text) => stream.write(text), err: stdio.err, drain: () => drained(stream) },
    finish: (status) => (finished ??= settle(status)),
  };
}
