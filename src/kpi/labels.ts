// What a person reads for a metric key (issue 30: "KPIs as raw metric keys"): an organization's own
// label (kpi_labels, sql/0027), else the metric's label (kpi_metrics.label: the key, as ingest
// registers it, unless the platform gave it a default). Set by a manager of the organization (or an
// admin for it, or for every organization's default) through setKpiLabel, or by provisioning
// (orgs[].kpi_labels), each change audited in its own transaction.
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql } from "../db/client";
import type { Refusal } from "../errors";
import { cleanText } from "../http/fields";

export const METRIC_KEY = /^[A-Za-z0-9_.:-]{1,60}$/;
export const LABEL_MAX = 80;

export interface LabelChange {
  /** An admin's organization (ignored for an actor confined to one); null with an admin: the default of every organization. */
  org?: number | null;
  metric: string;
  /** Empty: the organization's label is removed (the default shows again). */
  label: string;
}

export type LabelResult =
  | { ok: true; org: number | null; metric: string; label: string | null }
  | Refusal<"not_allowed" | "bad_metric_key" | "bad_label" | "not_found">;

/**
 * Sets (or with an empty label removes) an organization's label for a metric key. A key without
 * points yet may be labelled (a dashboard prepared before its first point). An agent may not.
 */
export async function setKpiLabel(sql: Sql, actor: Actor, change: LabelChange, now: Date): Promise<LabelResult> {
  if (actor.agent !== null) return { ok: false, reason: "not_allowed" };
  if (!METRIC_KEY.test(change.metric)) return { ok: false, reason: "bad_metric_key" };
  const label = cleanText(change.label);
  if (Array.from(label).length > LABEL_MAX || /[\u0000-\u001f\u007f]/.test(label)) return { ok: false, reason: "bad_label" };
  const org = actor.orgId ?? change.org ?? null;
  return sql.begin(async (tx) => {
    if (org === null) {
      // The platform's default for every organization: the metric's own label (the key when empty).
      const rows = await tx`
        insert into kpi_metrics (key, label) values (${change.metric}, ${label || change.metric})
        on conflict (key) do update set label = excluded.label returning key`;
      await audit(tx, actor, "kpi.label", `metric:${change.metric}`, { label: label || null }, null);
      return rows.length ? { ok: true, org: null, metric: change.metric, label: label || null } : { ok: false, reason: "not_found" };
    }
    const [known] = await tx`select 1 from orgs where id = ${org}`;
    if (!known) return { ok: false, reason: "not_found" };
    if (label === "") await tx`delete from kpi_labels where org_id = ${org} and metric_key = ${change.metric}`;
    else
      await tx`
        insert into kpi_labels (org_id, metric_key, label, updated_at) values (${org}, ${change.metric}, ${label}, ${now})
        on conflict (org_id, metric_key) do update set label = excluded.label, updated_at = excluded.updated_at`;
    await audit(tx, actor, "kpi.label", `metric:${change.metric}`, { label: label || null }, org);
    return { ok: true, org, metric: change.metric, label: label || null };
  });
}
