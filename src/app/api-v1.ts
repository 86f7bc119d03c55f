// /hooks/api_v1.php: query-routed. `r` selects the operation among the declared routes of this
// path (src/http/route.ts: `select: {param: "r", value}`), through the one dispatcher
// (src/http/dispatch.ts); GET accepts only leads/{id}, conversations/{id} and cti/lookup, POST only
// messages and cti/dial (api-v1.md); anything else, and the other method, is 404.
import { API_V1_PATH } from "../http/keyed";
import type { PathRoute } from "../http/route";

/** The path, served natively (src/http/native.ts); its other methods are 404 like an unknown `r`. */
export const apiV1Path: PathRoute = {
  path: API_V1_PATH,
  surface: "key",
  select: { param: "r", unknown: "not_found" },
  otherMethods: "not_found",
  native: true,
};
