// TEMPORARY STUB of the core's src/console/html.ts (console.md): replaced by main's at merge.
import type { Deps } from "../http/deps";
import type { Viewer } from "./route";

export interface Html { readonly html: string }
export function html(_strings: TemplateStringsArray, ..._values: unknown[]): Html {
  throw new Error("stub");
}
export const raw = (trusted: string): Html => ({ html: trusted });
export function csrfField(_viewer: Viewer): Html {
  throw new Error("stub");
}
export type NavId = "inbox" | "leads" | "calls" | "dni" | "appointments" | "webhooks" | "keys" | "kpi" | "billing" | "audit";
export function consoleHtml(_deps: Deps, _viewer: Viewer, _p: { title: string; nav: NavId; body: Html; status?: number; scripts?: string[] }): Promise<Response> {
  throw new Error("stub");
}
export function notFoundPage(_deps: Deps, _viewer: Viewer): Promise<Response> {
  throw new Error("stub");
}
export const seeOther = (location: string): Response => new Response(null, { status: 303, headers: { location } });
export function when(_epochMs: number | Date, _zone: string): string {
  throw new Error("stub");
}
export function notice(_text: string, _kind?: "ok" | "error"): Html {
  throw new Error("stub");
}
