// TEMPORARY stand-in for the core's html.ts (console.md's Core API) until the core lands on main;
// replaced by the core's file at merge.
import { escapeHtml } from "../http/html";

export interface Html {
  readonly html: string;
}

const isHtml = (v: unknown): v is Html => typeof v === "object" && v !== null && "html" in v && typeof (v as Html).html === "string";

function part(v: unknown): string {
  if (v === null || v === undefined || v === false) return "";
  if (Array.isArray(v)) return v.map(part).join("");
  if (isHtml(v)) return v.html;
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
  return { html: out };
}

export const raw = (trusted: string): Html => ({ html: trusted });

import type { Deps } from "../http/deps";
import type { Viewer } from "./route";

export type NavId = "inbox" | "leads" | "calls" | "dni" | "appointments" | "webhooks" | "keys" | "kpi" | "billing" | "audit";

export async function consoleHtml(
  _deps: Deps,
  _viewer: Viewer,
  p: { title: string; nav: NavId; body: Html; status?: number; scripts?: string[] },
): Promise<Response> {
  return new Response(`<!doctype html><title>${p.title}</title>${p.body.html}`, { status: p.status ?? 200, headers: { "content-type": "text/html; charset=utf-8" } });
}

export async function notFoundPage(_deps: Deps, _viewer: Viewer): Promise<Response> {
  return new Response("not found", { status: 404 });
}

export function when(epochMs: number | Date, zone: string): string {
  return new Intl.DateTimeFormat("en-US", { timeZone: zone, dateStyle: "medium", timeStyle: "short" }).format(epochMs);
}

export function notice(text: string, kind: "ok" | "error" = "ok"): Html {
  return html`<p class="notice notice-${kind}" role="status">${text}</p>`;
}
