// `leadline secrets …`: re-sealing stored provider credentials and webhook secrets under a new
// LEADLINE_SECRET_KEY, and saying under which key each is stored. Queries in stored.ts.
import type { Sql } from "../db/client";
import { noPositional, parseArgs } from "../args";
import { UsageError } from "../errors";
import { keyId, sealedBy } from "./seal";
import { rotateSecrets, storedSecrets } from "./stored";

export const SECRETS_HELP = `usage: leadline secrets rotate | status

  rotate   re-seal every stored secret (orgs' sms.auth_token and email.smtp_url, webhook
           endpoints' secret) under LEADLINE_SECRET_KEY, in one transaction. Values sealed with
           the previous key are opened with LEADLINE_SECRET_KEY_OLD; values stored in clear are
           sealed (so the first rotate after setting a key needs no old key). Nothing changes
           when one value opens with neither key. Running it again changes nothing.
           Stop serve (or restart it right after): a server started with the old key cannot
           open what is re-sealed under the new one.
  status   how many stored secrets are in clear and how many are sealed under each key id
           (8 hex digits of the key's SHA-256); never prints a secret

environment: DATABASE_URL LEADLINE_SECRET_KEY LEADLINE_SECRET_KEY_OLD
             (a key is 32 bytes as 64 hex digits or base64: openssl rand -base64 32)
`;

export interface SecretKeys {
  key: Buffer | null;
  old: Buffer | null;
}

/** `--help` anywhere in the arguments: answered before any database is opened. */
export const wantsHelp = (args: string[]) => args.includes("--help") || args.includes("-h");

export async function secretsCommand(sql: Sql, args: string[], keys: SecretKeys): Promise<number> {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    process.stdout.write(SECRETS_HELP);
    return 0;
  }
  switch (sub) {
    case "rotate": {
      noPositional("secrets rotate", parseArgs("secrets rotate", rest, [], []).positional);
      if (keys.key === null) throw new UsageError("secrets rotate: LEADLINE_SECRET_KEY (the new key) is not set");
      const r = await rotateSecrets(sql, keys.key, keys.old);
      process.stdout.write(
        `secrets under key ${keyId(keys.key)}: ${r.resealed} re-sealed from the old key, ${r.sealed} sealed from clear, ${r.unchanged} already sealed\n`,
      );
      return 0;
    }
    case "status": {
      noPositional("secrets status", parseArgs("secrets status", rest, [], []).positional);
      const counts = new Map<string, number>();
      for (const s of await storedSecrets(sql)) {
        const by = sealedBy(s.value);
        const label = by === null ? "clear" : `key ${by}${keys.key !== null && by === keyId(keys.key) ? " (LEADLINE_SECRET_KEY)" : ""}`;
        counts.set(label, (counts.get(label) ?? 0) + 1);
      }
      if (counts.size === 0) process.stdout.write("no stored secrets\n");
      for (const [label, n] of counts) process.stdout.write(`${label}: ${n}\n`);
      return 0;
    }
    default:
      throw new UsageError(sub === undefined ? "usage: leadline secrets rotate|status (--help)" : `secrets: unknown subcommand ${JSON.stringify(sub)}`);
  }
}
