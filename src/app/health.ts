// Operational routes (operations.md §4): the process is up; the database answers.
import { Elysia } from "elysia";
import type { Sql } from "../db/client";
import { withDeadline } from "../db/deadline";
import { errorOf } from "../http/respond";

export const healthRoutes = (sql: Sql) =>
  new Elysia({ name: "health" })
    .get("/healthz", () => ({ ok: true }))
    .get("/readyz", async () => {
      try {
        await withDeadline(sql`select 1`, 800);
        return { ok: true };
      } catch {
        return errorOf("unavailable", "public");
      }
    });
