import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import type { KpiBatch, PointError } from "./model";
import { upsertPoints } from "./queries";

/** The server's current date (its local time zone, as the contract says), as YYYY-MM-DD. */
export function localDay(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

export type KpiResult = { ok: true; upserts: number; errors?: PointError[] };

/** Partial batch processing: valid points are upserted even when siblings fail. */
export async function ingestKpi(sql: Sql, actor: Actor, batch: KpiBatch, now: Date): Promise<KpiResult> {
  const { errors } = batch;
  // A tenant key's own organization always overrides request input (api-v1.md).
  const valid = actor.orgId === null ? batch.valid : batch.valid.map((p) => ({ ...p, orgId: actor.orgId }));
  if (valid.length === 0) throw new AppError("no_valid_points", "no point is valid", { errors });
  await upsertPoints(sql, valid, localDay(now));
  return errors.length ? { ok: true, upserts: valid.length, errors } : { ok: true, upserts: valid.length };
}
