// POST /hooks/calls.php: a dialer reports a call (operations.md §4).
import { Elysia } from "elysia";
import { bodyFields } from "../http/body";
import type { Deps } from "../http/deps";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import { reportCall } from "./service";

const REPORT: KeyedSpec = {
  need: { scope: "calls:write", limit: "calls", scopeError: "wrong_scope" },
  bodyLimit: 64 * 1024,
};

export const callRoutes = (deps: Deps) =>
  new Elysia({ name: "calls" }).post(
    "/hooks/calls.php",
    ({ request }) => runKeyed(deps, request, REPORT, ({ actor }, body) => reportCall(deps.sql, actor, bodyFields(body) ?? {}, deps.clock.now())),
    { parse: "none" },
  );
