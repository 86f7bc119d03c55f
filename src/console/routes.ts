// Every route of the console (README: Console), for the assembly (src/app/app.ts).
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { accountRoutes } from "./account";
import { appointmentRoutes } from "./appointments/routes";
import { auditRoutes } from "./audit-log/routes";
import { billingRoutes } from "./billing";
import { callRoutes } from "./calls";
import { dniRoutes } from "./dni";
import { keyRoutes } from "./keys/routes";
import { kpiRoutes } from "./kpi";
import { webhookRoutes } from "./webhooks/routes";
import { signInRoutes } from "./sign-in";

export function consoleRoutes(deps: Deps): Route[] {
  return [
    ...signInRoutes(deps),
    ...accountRoutes(deps),
    ...appointmentRoutes(deps),
    ...webhookRoutes(deps),
    ...keyRoutes(deps),
    ...auditRoutes(deps),
    ...callRoutes(deps),
    ...dniRoutes(deps),
    ...kpiRoutes(deps),
    ...billingRoutes(deps),
  ];
}
