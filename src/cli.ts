// Subcommands of the executable. Each returns an exit status; errors print one line to stderr.
import { ConfigError, loadConfig, type Config } from "./config";
import { openDatabase, type Database } from "./db/open";
import { migrate } from "./db/migrate";
import { UsageError } from "./errors";
import { setLogLevel } from "./log";
import { VERSION } from "./version";

export const USAGE = `leadline ${VERSION} — lead management and outreach backend

usage: leadline [command] [options]

commands:
  serve                      apply pending migrations, start workers, listen on HOST:PORT (default)
  migrate                    apply pending migrations and exit
  provision FILE             apply a provisioning file (JSON) idempotently; prints generated keys
  keys create --scopes a,b [--org N] [--agent USER] [--name TEXT] [--json]
                             print a new API key once (no --org: platform-global)
  keys list [--json]         list keys (never plaintext)
  keys revoke ID             revoke a key
  keys rotate ID [--json]    issue a replacement key with the same grants and revoke the old one
  webhooks list [--json]     list webhook endpoints with their state and pending/failed deliveries
  webhooks deliveries [--endpoint ID] [--failed] [--limit N] [--json]
                             list deliveries, newest first
  webhooks attempts DELIVERY_ID [--json]
                             every attempt of a delivery: time, address, status, error, response
  webhooks replay DELIVERY_ID [--json]
                             send a delivery again now, as a new attempt of the same event id
  webhooks enable ID         enable an endpoint disabled by a 410 response
  secrets rotate             re-seal stored provider credentials and webhook secrets under
                             LEADLINE_SECRET_KEY (the previous key in LEADLINE_SECRET_KEY_OLD)
  secrets status             how many stored secrets are in clear and under which key
  dni report [--pool KEY] [--since YYYY-MM-DD] [--json]
                             visitors, page views, form events and calls per pool and UTM source/medium/campaign
  version                    print the version
  --help                     this text

scopes: leads:read leads:write conversations:read messages:write cti metrics:write calls:write
environment: DATABASE_URL DATA_DIR PORT HOST BASE_URL COMMS_INBOUND_LIST_ID NPK_IP_SALT
             TRUST_PROXY LOG_LEVEL WEBHOOK_ALLOW_PRIVATE DB_POOL_MAX DNI_CACHE_SIZE
             LEADLINE_SECRET_KEY LEADLINE_SECRET_KEY_OLD (see README.md)
`;

async function withDb<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(config, "cli");
  try {
    await migrate(db.sql);
    return await fn(db);
  } finally {
    await db.close();
  }
}

export async function runCli(argv: string[]): Promise<number> {
  const [cmd = "serve", ...rest] = argv;
  try {
    if (cmd === "--help" || cmd === "-h" || cmd === "help") {
      process.stdout.write(USAGE);
      return 0;
    }
    if (cmd === "version" || cmd === "--version") {
      process.stdout.write(VERSION + "\n");
      return 0;
    }
    const config = loadConfig();
    setLogLevel(config.logLevel);
    switch (cmd) {
      case "serve": {
        const { serve } = await import("./app/server");
        return await serve(config);
      }
      case "migrate":
        return await withDb(config, async () => {
          process.stdout.write("migrations applied\n");
          return 0;
        });
      case "provision": {
        const { provisionCommand } = await import("./provision/command");
        return await withDb(config, (db) => provisionCommand(db.sql, rest, undefined, config.secretKey));
      }
      case "keys": {
        const { keysCommand } = await import("./auth/command");
        return await withDb(config, (db) => keysCommand(db.sql, rest));
      }
      case "webhooks": {
        const { webhooksCommand } = await import("./events/command");
        return await withDb(config, (db) => webhooksCommand(db.sql, rest, { allowPrivate: config.webhookAllowPrivate, secretKey: config.secretKey }));
      }
      case "secrets": {
        const { secretsCommand, SECRETS_HELP, wantsHelp } = await import("./secrets/command");
        if (wantsHelp(rest)) {
          process.stdout.write(SECRETS_HELP);
          return 0;
        }
        return await withDb(config, (db) => secretsCommand(db.sql, rest, { key: config.secretKey, old: config.secretKeyOld }));
      }
      case "dni": {
        const { dniCommand } = await import("./dni/command");
        return await withDb(config, (db) => dniCommand(db.sql, rest));
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(cmd)}; see leadline --help`);
    }
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const prefix = err instanceof UsageError || err instanceof ConfigError ? "" : "error: ";
    process.stderr.write(`leadline: ${prefix}${msg.split("\n")[0]}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}
