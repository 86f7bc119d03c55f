import { Elysia } from "elysia";
import type { Sql } from "../db/client";
import { json, withDeadline } from "./respond";

export const healthRoutes = (sql: Sql) =>
  new Elysia({ name: "health" })
    .get("/healthz", () => ({ ok: true }))
    .get("/readyz", async () => {
      try {
        await withDeadline(sql`select 1`, 800);
        return { ok: true };
      } catch {
        return json({ ok: false, error: "unavailable" }, 503);
      }
    });
