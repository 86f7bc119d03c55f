import { Elysia } from "elysia";
import type { Deps } from "../http/deps";
import { AppError } from "../http/errors";
import { bodyFields } from "../http/body";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import { intakeLead } from "./service";

const INTAKE: KeyedSpec = {
  need: { scope: "leads:write", family: "intake", scopeError: "forbidden" },
  bodyLimit: 64 * 1024,
};

export const leadRoutes = (deps: Deps) =>
  new Elysia({ name: "leads" }).post(
    "/hooks/lead_intake.php",
    ({ request }) =>
      runKeyed(deps, request, INTAKE, ({ key }, body) => {
        const fields = bodyFields(body);
        if (!fields) {
          throw body.kind === "empty" ? new AppError("bad_phone", "phone is required") : new AppError("malformed_body");
        }
        return intakeLead(deps.sql, key, fields, deps.config.inboundListId);
      }),
    { parse: "none" },
  );
