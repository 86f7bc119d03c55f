// The console's scripts, style sheets and icon, built into the executable (no runtime files, no
// third-party or CDN assets) and served at /console/assets/{name} with a version in the URL, so
// they are cached for a year and a new executable is fetched at once.
import { createHash } from "node:crypto";
import reportsCss from "./assets/reports.css" with { type: "text" };
import copyTagJs from "./assets/copy-tag.js" with { type: "text" };
import consoleCss from "./assets/console.css" with { type: "text" };
// htmx and its SSE extension (npm, pinned in package.json), embedded like the console's own files.
import htmxJs from "htmx.org/dist/htmx.min.js" with { type: "text" };
import htmxSseJs from "htmx-ext-sse/dist/sse.min.js" with { type: "text" };
import inboxJs from "./assets/inbox.js" with { type: "text" };
import consoleJs from "./assets/console.js" with { type: "text" };
import icon from "./assets/icon.svg" with { type: "text" };
import operationsCss from "./assets/operations.css" with { type: "text" };
import composerJs from "./assets/composer.js" with { type: "text" };
import inboxCss from "./assets/inbox.css" with { type: "text" };
import leadCss from "./assets/lead.css" with { type: "text" };
import timelineJs from "./assets/timeline.js" with { type: "text" };
import olderJs from "./assets/older.js" with { type: "text" };
import notifyJs from "./assets/notify.js" with { type: "text" };
import todayJs from "./assets/today.js" with { type: "text" };

export interface Asset {
  body: string;
  type: string;
}

/** Every file the console serves: one line per file (add yours here). */
export const ASSETS: Readonly<Record<string, Asset>> = {
  "console.css": { body: consoleCss, type: "text/css; charset=utf-8" },
  "console.js": { body: consoleJs, type: "text/javascript; charset=utf-8" },
  "icon.svg": { body: icon, type: "image/svg+xml" },
  "operations.css": { body: operationsCss, type: "text/css; charset=utf-8" },
  "reports.css": { body: reportsCss, type: "text/css; charset=utf-8" },
  "copy-tag.js": { body: copyTagJs, type: "text/javascript; charset=utf-8" },
  "lead.css": { body: leadCss, type: "text/css; charset=utf-8" },
  "timeline.js": { body: timelineJs, type: "text/javascript; charset=utf-8" },
  "older.js": { body: olderJs, type: "text/javascript; charset=utf-8" },
  "notify.js": { body: notifyJs, type: "text/javascript; charset=utf-8" },
  "today.js": { body: todayJs, type: "text/javascript; charset=utf-8" },
  "inbox.css": { body: inboxCss, type: "text/css; charset=utf-8" },
  "composer.js": { body: composerJs, type: "text/javascript; charset=utf-8" },
  "inbox.js": { body: inboxJs, type: "text/javascript; charset=utf-8" },
  "htmx.min.js": { body: htmxJs, type: "text/javascript; charset=utf-8" },
  "htmx-sse.min.js": { body: htmxSseJs, type: "text/javascript; charset=utf-8" },
};

const versions = new Map(Object.entries(ASSETS).map(([name, a]) => [name, createHash("sha1").update(a.body).digest("hex").slice(0, 12)]));

/** The URL of an asset with its content's version; a name not in ASSETS is a bug, refused at render. */
export function assetUrl(name: string): string {
  const v = versions.get(name);
  if (v === undefined) throw new Error(`console asset ${name} is not in ASSETS`);
  return `/console/assets/${name}?v=${v}`;
}
