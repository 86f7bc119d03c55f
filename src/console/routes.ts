// Every route of the console (docs/console.md), for the assembly (src/app/app.ts), in the
// order of a working day.
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { accountRoutes } from "./account";
import { attributionRoutes } from "./attribution";
import { appointmentRoutes } from "./appointments/routes";
import { auditRoutes } from "./audit-log/routes";
import { billingRoutes } from "./billing";
import { callRoutes } from "./calls";
import { dniRoutes } from "./dni";
import { inboxRoutes } from "./inbox";
import { inboxStreamRoutes } from "./inbox-stream";
import { installerRoutes } from "./installer";
import { keyRoutes } from "./keys/routes";
import { kpiRoutes } from "./kpi";
import { leadPageRoutes } from "./lead";
import { leadActionRoutes } from "./lead-actions";
import { leadEditRoutes } from "./lead-edit";
import { newLeadRoutes } from "./lead-new";
import { leadsRoutes } from "./leads";
import { myWorkRoutes } from "./my-work";
import { searchRoutes } from "./search";
import { olderRoutes } from "./timeline-older";
import { settingsRoutes } from "./settings/routes";
import { signInRoutes } from "./sign-in";
import { todayRoutes } from "./today";
import { webhookRoutes } from "./webhooks/routes";

export function consoleRoutes(deps: Deps): Route[] {
  return [
    ...signInRoutes(deps),
    ...installerRoutes(deps),
    ...accountRoutes(deps),
    ...todayRoutes(deps),
    ...inboxRoutes(deps),
    ...inboxStreamRoutes(deps),
    ...myWorkRoutes(deps),
    ...leadsRoutes(deps),
    ...searchRoutes(deps),
    ...leadPageRoutes(deps),
    ...olderRoutes(deps),
    ...leadEditRoutes(deps),
    ...leadActionRoutes(deps),
    ...newLeadRoutes(deps),
    ...callRoutes(deps),
    ...appointmentRoutes(deps),
    ...dniRoutes(deps),
    ...kpiRoutes(deps),
    ...attributionRoutes(deps),
    ...billingRoutes(deps),
    ...webhookRoutes(deps),
    ...keyRoutes(deps),
    ...auditRoutes(deps),
    ...settingsRoutes(deps),
  ];
}
