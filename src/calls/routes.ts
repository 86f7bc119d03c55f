// Routes a dialer and an agent's CTI client use (operations.md §4).
import { Elysia } from "elysia";
import { claimNextDial } from "../cti/service";
import type { Deps } from "../http/deps";
import { bodyFields } from "../http/body";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import { reportCall } from "./service";

const REPORT: KeyedSpec = {
  need: { scope: "calls:write", family: "calls", scopeError: "wrong_scope" },
  bodyLimit: 64 * 1024,
};
const CLAIM: KeyedSpec = { need: { scope: "cti", family: "api_v1", scopeError: "wrong_scope", agent: true } };

export const callRoutes = (deps: Deps) =>
  new Elysia({ name: "calls" })
    .post(
      "/hooks/calls.php",
      ({ request }) => runKeyed(deps, request, REPORT, ({ key }, body) => reportCall(deps.sql, key, bodyFields(body) ?? {}, deps.now())),
      { parse: "none" },
    )
    .get("/hooks/cti_queue.php", ({ request }) => runKeyed(deps, request, CLAIM, ({ key }) => claimNextDial(deps.sql, key)));
