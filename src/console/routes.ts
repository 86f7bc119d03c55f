// Every route of the console (README: Console), for the assembly (src/app/app.ts).
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { accountRoutes } from "./account";
import { inboxRoutes } from "./inbox";
import { leadPageRoutes } from "./lead";
import { leadsRoutes } from "./leads";
import { signInRoutes } from "./sign-in";

export function consoleRoutes(deps: Deps): Route[] {
  return [...signInRoutes(deps), ...accountRoutes(deps), ...inboxRoutes(deps), ...leadsRoutes(deps), ...leadPageRoutes(deps)];
}
