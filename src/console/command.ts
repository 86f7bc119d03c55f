// `leadline users …`: console users from the command line (argument parsing and output; the
// queries live in users.ts).
import { noPositional, parseArgs, positiveInt, printJson, printTable, textCell, type Io } from "../args";
import { systemClock, type Clock } from "../clock";
import type { Config } from "../config";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";
import { createUser, disableUser, inviteUser, listUsers, revokeSessions, ROLES, setPassword, turnOffTotp, type Role } from "./users";

const inviteUrl = (baseUrl: string, token: string) => `${baseUrl}/console/invite/${token}`;

function emailOf(cmd: string, flags: Map<string, string | true>): string {
  const email = flags.get("--email");
  if (typeof email !== "string" || email.trim() === "") throw new UsageError(`users ${cmd}: --email is required`);
  return email;
}

export async function usersCommand(sql: Sql, args: string[], config: Pick<Config, "baseUrl">, io: Io, clock: Clock = systemClock): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "create": {
      const { flags, positional } = parseArgs("users create", rest, ["--email", "--role", "--org", "--id", "--name"], ["--json"]);
      noPositional("users create", positional);
      const role = flags.get("--role");
      if (typeof role !== "string" || !ROLES.includes(role as Role)) throw new UsageError(`users create: --role is one of ${ROLES.join(", ")}`);
      const org = flags.get("--org");
      const id = flags.get("--id");
      const name = flags.get("--name");
      const user = await createUser(sql, {
        email: emailOf("create", flags),
        role: role as Role,
        orgId: typeof org === "string" ? positiveInt("users", "--org", org) : null,
        id: typeof id === "string" ? id : undefined,
        name: typeof name === "string" ? name : undefined,
      });
      const invite = await inviteUser(sql, user.email, clock.now());
      const url = inviteUrl(config.baseUrl, invite.token);
      if (flags.has("--json")) {
        printJson(io, { id: user.id, email: user.email, role: user.role, org_id: user.orgId, invite_url: url, invite_expires_at: invite.expiresAt.toISOString() });
      } else {
        io.err(`created ${user.role} ${textCell(user.email)} (user ${textCell(user.id)}${user.orgId === null ? "" : `, org ${user.orgId}`}); the link to set a password works once, for 72 hours:\n`);
        io.out(url + "\n");
      }
      return 0;
    }
    case "invite": {
      const { flags, positional } = parseArgs("users invite", rest, ["--email"], ["--json"]);
      noPositional("users invite", positional);
      const invite = await inviteUser(sql, emailOf("invite", flags), clock.now());
      const url = inviteUrl(config.baseUrl, invite.token);
      if (flags.has("--json")) printJson(io, { email: invite.user.email, invite_url: url, invite_expires_at: invite.expiresAt.toISOString() });
      else {
        io.err(`a link for ${textCell(invite.user.email)} to set a password; it works once, for 72 hours (older links no longer work):\n`);
        io.out(url + "\n");
      }
      return 0;
    }
    case "passwd": {
      const { flags, positional } = parseArgs("users passwd", rest, ["--email"], []);
      noPositional("users passwd", positional);
      const email = emailOf("passwd", flags);
      const text = await io.readInput("-");
      const password = text.replace(/\r?\n$/, "").split(/\r?\n/)[0] ?? "";
      await setPassword(sql, { email }, password, clock.now());
      io.err(`password set for ${textCell(email.trim().toLowerCase())}; every session of the user has ended\n`);
      return 0;
    }
    case "revoke-sessions": {
      const { flags, positional } = parseArgs("users revoke-sessions", rest, ["--email"], []);
      noPositional("users revoke-sessions", positional);
      const n = await revokeSessions(sql, emailOf("revoke-sessions", flags), clock.now());
      io.out(`ended ${n} session${n === 1 ? "" : "s"}\n`);
      return 0;
    }
    case "totp-off": {
      const { flags, positional } = parseArgs("users totp-off", rest, ["--email"], []);
      noPositional("users totp-off", positional);
      await turnOffTotp(sql, emailOf("totp-off", flags), clock.now());
      io.out("two-step sign-in is off and every session of the user has ended; they sign in with their password alone\n");
      return 0;
    }
    case "disable": {
      const { flags, positional } = parseArgs("users disable", rest, ["--email"], []);
      noPositional("users disable", positional);
      const { user, revokedKeys } = await disableUser(sql, emailOf("disable", flags), clock.now());
      io.out("disabled; the user can no longer sign in\n");
      const n = revokedKeys.length;
      io.out(
        n === 0
          ? `no API key was bound to user ${textCell(user.id)}\n`
          : `revoked ${n} API key${n === 1 ? "" : "s"} bound to user ${textCell(user.id)}: ${revokedKeys.join(", ")} (final; leadline keys create makes new ones)\n`,
      );
      return 0;
    }
    case "list": {
      const { flags, positional } = parseArgs("users list", rest, [], ["--json"]);
      noPositional("users list", positional);
      const users = await listUsers(sql);
      if (flags.has("--json")) {
        printJson(io, users.map((u) => ({ id: u.id, email: u.email, name: u.name, role: u.role, org_id: u.orgId, password_set: u.hasPassword, sessions: u.sessions })));
      } else {
        printTable(io, [
          ["ID", "EMAIL", "ROLE", "ORG", "PASSWORD", "SESSIONS"],
          ...users.map((u) => [textCell(u.id), textCell(u.email), u.role, u.orgId === null ? "-" : String(u.orgId), u.hasPassword ? "set" : "not set", String(u.sessions)]),
        ]);
      }
      return 0;
    }
    default:
      throw new UsageError(`users: unknown subcommand ${JSON.stringify(sub ?? "")}; see leadline users --help`);
  }
}
