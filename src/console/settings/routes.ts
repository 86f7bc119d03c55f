// The settings pages (docs/console-settings.md): each form a provisioning-file fragment for one
// object, applied by the provisioning service with the console user as the actor (apply.ts).
import type { Deps } from "../../http/deps";
import type { Route } from "../../http/route";
import { automationSettingsRoutes } from "./automations";
import { calendarSettingsRoutes } from "./calendars";
import { firstStepsRoutes } from "./first-steps";
import { orgSettingsRoutes } from "./org";
import { poolSettingsRoutes } from "./pools";
import { replySettingsRoutes } from "./replies";
import { statusSettingsRoutes } from "./statuses";
import { tagSettingsRoutes } from "./tags";
import { userSettingsRoutes } from "./users";
import { webhookSettingsRoutes } from "./webhooks";

export function settingsRoutes(deps: Deps): Route[] {
  return [...firstStepsRoutes(deps), ...orgSettingsRoutes(deps), ...userSettingsRoutes(deps), ...webhookSettingsRoutes(deps), ...automationSettingsRoutes(deps), ...calendarSettingsRoutes(deps), ...poolSettingsRoutes(deps), ...statusSettingsRoutes(deps), ...replySettingsRoutes(deps), ...tagSettingsRoutes(deps)];
}
