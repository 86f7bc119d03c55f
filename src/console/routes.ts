// Every route of the console (docs/console.md), for the assembly (src/app/app.ts), in the
// order of a working day.
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { accountRoutes } from "./account";
import { appointmentRoutes } from "./appointments/routes";
import { auditRoutes } from "./audit-log/routes";
import { billingRoutes } from "./billing";
import { callRoutes } from "./calls";
import { dniRoutes } from "./dni";
import { inboxRoutes } from "./inbox";
import { installerRoutes } from "./installer";
import { keyRoutes } from "./keys/routes";
import { kpiRoutes } from "./kpi";
import { leadPageRoutes } from "./lead";
import { leadsRoutes } from "./leads";
import { signInRoutes } from "./sign-in";
import { webhookRoutes } from "./webhooks/routes";

export function consoleRoutes(deps: Deps): Route[] {
  return [
    ...signInRoutes(deps),
    ...installerRoutes(deps),
    ...accountRoutes(deps),
    ...inboxRoutes(deps),
    ...leadsRoutes(deps),
    ...leadPageRoutes(deps),
    ...callRoutes(deps),
    ...appointmentRoutes(deps),
    ...dniRoutes(deps),
    ...kpiRoutes(deps),
    ...billingRoutes(deps),
    ...webhookRoutes(deps),
    ...keyRoutes(deps),
    ...auditRoutes(deps),
  ];
}
