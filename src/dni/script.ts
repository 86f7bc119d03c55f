// GET /dni.js: the browser script, embedded in the executable as text and minified once at start
// (Bun's bundler, from memory), with an ETag of its bytes.
import { createHash } from "node:crypto";
import { errorFields, log } from "../log";
import source from "./dni.js" with { type: "text" };

export interface Script {
  body: string;
  etag: string;
}

let built: Promise<Script> | null = null;

/** The script as served; built on first use and kept. */
export function dniScript(): Promise<Script> {
  return (built ??= build());
}

async function build(): Promise<Script> {
  let body = source;
  try {
    const out = await Bun.build({ entrypoints: ["/dni.js"], files: { "/dni.js": source }, minify: true, target: "browser" });
    if (out.success) body = await out.outputs[0].text();
  } catch (err) {
    // Served as written: larger, but the same behaviour.
    log.warn("minifying dni.js failed; serving it unminified", errorFields(err));
  }
  const etag = `"${createHash("sha1").update(body).digest("base64url")}"`;
  return { body, etag };
}

/** The tag a site pastes to load the script for a pool (operations.md, section 5). */
export const dniScriptTag = (baseUrl: string, pool: string): string =>
  `<script src="${baseUrl.replace(/\/+$/, "")}/dni.js" data-pool="${pool}" async></script>`;
