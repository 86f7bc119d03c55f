// Routes a dialer and an agent's CTI client use (operations.md §4).
import { Elysia } from "elysia";
import { authorize, refuseFromMemory, type Need } from "../auth/guard";
import { claimNextDial } from "../cti/service";
import type { Deps } from "../http/deps";
import { AppError } from "../http/errors";
import { bodyFields, readBody } from "../http/body";
import { withDeadline } from "../http/respond";
import { reportCall } from "./service";

export const CALLS_BODY_LIMIT = 64 * 1024;

const REPORT: Need = { scope: "calls:write", family: "calls", scopeError: "wrong_scope" };
const CLAIM: Need = { scope: "cti", family: "api_v1", scopeError: "wrong_scope", agent: true };

export const callRoutes = (deps: Deps) =>
  new Elysia({ name: "calls" })
    .post(
      "/hooks/calls.php",
      async ({ request }) => {
        const refused = refuseFromMemory(deps, request, REPORT);
        if (refused) return refused;
        const body = await readBody(request, CALLS_BODY_LIMIT);
        const fields = bodyFields(body);
        return withDeadline(
          (async () => {
            const { key } = await authorize(deps, request, fields, REPORT);
            if (body.kind === "too_large") throw new AppError("body_too_large", "body over 64 KiB");
            if (body.kind === "malformed") throw new AppError(body.code);
            return reportCall(deps.sql, key, fields ?? {}, deps.now());
          })(),
        );
      },
      { parse: "none" },
    )
    .get("/hooks/cti_queue.php", ({ request }) =>
      withDeadline(
        (async () => {
          const { key } = await authorize(deps, request, null, CLAIM);
          return claimNextDial(deps.sql, key);
        })(),
      ),
    );
