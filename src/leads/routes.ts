import { Elysia } from "elysia";
import { authorize, refuseFromMemory, type Need } from "../auth/guard";
import type { Deps } from "../http/deps";
import { AppError } from "../http/errors";
import { bodyFields, readBody } from "../http/body";
import { withDeadline } from "../http/respond";
import { intakeLead } from "./service";

export const INTAKE_BODY_LIMIT = 64 * 1024;

const NEED: Need = { scope: "leads:write", family: "intake", scopeError: "forbidden" };

export const leadRoutes = (deps: Deps) =>
  new Elysia({ name: "leads" }).post(
    "/hooks/lead_intake.php",
    async ({ request }) => {
      const refused = refuseFromMemory(deps, request, NEED);
      if (refused) return refused;
      const body = await readBody(request, INTAKE_BODY_LIMIT);
      const fields = bodyFields(body);
      return withDeadline(
        (async () => {
          const { key } = await authorize(deps, request, fields, NEED);
          if (body.kind === "too_large") throw new AppError("body_too_large", "body over 64 KiB");
          if (body.kind === "malformed") throw new AppError(body.code);
          if (!fields) {
            throw body.kind === "empty" ? new AppError("bad_phone", "phone is required") : new AppError("malformed_body");
          }
          return intakeLead(deps.sql, key, fields, deps.config.inboundListId);
        })(),
      );
    },
    { parse: "none" },
  );
