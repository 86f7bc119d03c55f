// Who may export leads and calls as CSV, and the audit row every export leaves (issue 27.8). An
// export is every matching row at once, the organization's customer list in one file: a manager's
// right (and an admin's), an agent's only where the organization grants it.
import type { Sql } from "../db/client";
import { errorFields, log } from "../log";
import { auditOutcome, auditRow } from "./audit";
import { csvResponse } from "./csv";
import type { Viewer } from "./viewer";

/** Managers and admins; agents when their organization's `agents_export` is on (provisioning: orgs[].agents_export). */
export async function mayExport(sql: Sql, viewer: Viewer): Promise<boolean> {
  if (viewer.user.role !== "agent") return true;
  if (viewer.actor.orgId === null) return false;
  const [org] = await sql<{ agents_export: boolean }[]>`select agents_export from orgs where id = ${viewer.actor.orgId}`;
  return org?.agents_export === true;
}

export interface ExportSpec<T> {
  what: "leads" | "calls";
  /** The filter as the viewer gave it; empty fields are left out of the audit row. */
  filter: Record<string, unknown>;
  /** The organization whose audit log holds the row (an admin exporting one organization's: that one). */
  orgId: number | null;
  filename: string;
  header: readonly string[];
  rows: AsyncIterable<T[]>;
  cells: (row: T) => readonly unknown[];
}

/**
 * The CSV download, audited as `export.<what>` (who, the filter, the row count). The row is written
 * before the first byte leaves, so an export is never without it, even when the process dies
 * midway (its `rows` then stays null); when the stream ends, `rows` (those handed to the
 * connection) and `outcome` (`complete`, `cancelled`: the client went away, `failed`) are added.
 */
export async function auditedExport<T>(sql: Sql, viewer: Viewer, spec: ExportSpec<T>): Promise<Response> {
  const filter = Object.fromEntries(Object.entries(spec.filter).filter(([, v]) => v !== null && v !== undefined && v !== ""));
  const id = await auditRow(sql, viewer.actor, `export.${spec.what}`, spec.what, { filter, rows: null, outcome: null }, spec.orgId);
  return csvResponse(spec.filename, spec.header, spec.rows, spec.cells, async (rows, outcome) => {
    try {
      await auditOutcome(sql, id, { rows, outcome });
    } catch (err) {
      // The row stays, with rows null: the export is on record, its size is not.
      log.warn("export: the audit row's outcome was not written", { audit_id: id, rows, outcome, ...errorFields(err) });
    }
  });
}
