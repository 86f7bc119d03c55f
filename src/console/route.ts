// TEMPORARY STUB of the core's src/console/route.ts (console.md): replaced by main's at merge.
import type { TObject, TSchema } from "@sinclair/typebox";
import type { Actor } from "../auth/actor";
import type { ErrorCode } from "../errors";
import type { Deps } from "../http/deps";
import type { Route, Selected } from "../http/route";
import type { ConsoleUser, Role } from "./users";

export interface Viewer { user: ConsoleUser; actor: Actor; csrf: string; sessionId: string }
export interface PageDecl { id: string; summary: string; description?: string; method: "GET" | "POST"; path: string; roles?: Role[]; query?: TObject }
export interface JsonDecl extends PageDecl { body?: TObject; answer: TSchema; errors?: ErrorCode[] }
export function consolePage(_deps: Deps, _d: PageDecl, _handle: (viewer: Viewer, request: Request, selected: Selected) => Promise<Response> | Response): Route {
  throw new Error("stub");
}
export function consoleJson<Q, B>(_deps: Deps, _d: JsonDecl, _handle: (viewer: Viewer, input: { query: Q; body: B }, selected: Selected) => Promise<unknown>): Route {
  throw new Error("stub");
}
export async function formOf(_request: Request): Promise<Record<string, string>> {
  throw new Error("stub");
}
