// `leadline secrets …`: re-sealing stored provider credentials and webhook secrets under a new
// LEADLINE_SECRET_KEY, and saying under which key each is stored. Queries in stored.ts.
import type { Sql } from "../db/client";
import { noPositional, parseArgs, stdio, type Io } from "../args";
import { UsageError } from "../errors";
import { keyId, sealedBy } from "./seal";
import { rotateSecrets, storedSecrets } from "./stored";

export interface SecretKeys {
  key: Buffer | null;
  old: Buffer | null;
}

export async function secretsCommand(sql: Sql, args: string[], keys: SecretKeys, io: Io = stdio): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "rotate": {
      noPositional("secrets rotate", parseArgs("secrets rotate", rest, [], []).positional);
      if (keys.key === null) throw new UsageError("secrets rotate: LEADLINE_SECRET_KEY (the new key) is not set");
      const r = await rotateSecrets(sql, keys.key, keys.old);
      io.out(
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
      if (counts.size === 0) io.out("no stored secrets\n");
      for (const [label, n] of counts) io.out(`${label}: ${n}\n`);
      return 0;
    }
    default:
      throw new UsageError(sub === undefined ? "usage: leadline secrets rotate|status (--help)" : `secrets: unknown subcommand ${JSON.stringify(sub)}`);
  }
}
