// The operator commands that work on an open database, run the same way by the CLI on its own
// connection and by `serve` for a CLI on the control socket (./server.ts): one dispatch, so a
// command prints exactly the same either way.
import { escapeControls, type Io } from "../args";
import type { Config } from "../config";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";

/** What the control socket accepts. `serve`, `migrate` and `secrets` need the database to themselves. */
export const SOCKET_COMMANDS: ReadonlySet<string> = new Set(["provision", "keys", "users", "webhooks", "dni", "dnc", "dump"]);

export async function runCommand(sql: Sql, config: Config, argv: string[], io: Io): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case "provision": {
      const { provisionCommand } = await import("../provision/command");
      return provisionCommand(sql, rest, undefined, config.secretKey, io);
    }
    case "keys": {
      const { keysCommand } = await import("../auth/command");
      return keysCommand(sql, rest, undefined, io);
    }
    case "users": {
      const { usersCommand } = await import("../console/command");
      return usersCommand(sql, rest, config, io);
    }
    case "webhooks": {
      const { webhooksCommand } = await import("../events/command");
      return webhooksCommand(sql, rest, { allowPrivate: config.webhookAllowPrivate, secretKey: config.secretKey }, io);
    }
    case "dni": {
      const { dniCommand } = await import("../dni/command");
      return dniCommand(sql, rest, io);
    }
    case "dnc": {
      const { dncCommand } = await import("../leads/dnc-command");
      return dncCommand(sql, rest, io);
    }
    case "secrets": {
      const { secretsCommand } = await import("../secrets/command");
      return secretsCommand(sql, rest, { key: config.secretKey, old: config.secretKeyOld }, io);
    }
    case "dump": {
      // FILE is opened by whoever owns the terminal (the CLI), never by the server.
      if (rest.length > 0) throw new UsageError(`dump: unexpected argument ${JSON.stringify(rest[0])}; see leadline dump --help`);
      const { writeDump } = await import("../dump/dump");
      await writeDump(sql, io, new Date());
      return 0;
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(cmd ?? "")}; see leadline --help`);
  }
}

/**
 * One form for every error line: `leadline: <what went wrong>`; the exit status tells a usage
 * error (2) from a failure (1). Messages may quote outside text (a webhook's error, a name):
 * escaped like every CLI output.
 */
export function reportError(err: unknown, io: Pick<Io, "err">): number {
  const msg = err instanceof Error ? err.message : String(err);
  io.err(`leadline: ${escapeControls(msg.split("\n")[0])}\n`);
  return err instanceof UsageError ? 2 : 1;
}
