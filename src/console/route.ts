// TEMPORARY stand-in for the core's route.ts (console.md's Core API); replaced by the core's at merge.
import type { TObject } from "@sinclair/typebox";
import type { Actor } from "../auth/actor";
import type { Deps } from "../http/deps";
import type { Route, Selected } from "../http/route";
import type { ConsoleUser, Role } from "./users";

export interface Viewer {
  user: ConsoleUser;
  actor: Actor;
  csrf: string;
  sessionId: string;
}

export interface PageDecl {
  id: string;
  summary: string;
  description?: string;
  method: "GET" | "POST";
  path: string;
  roles?: Role[];
  query?: TObject;
}

export function consolePage(
  _deps: Deps,
  _d: PageDecl,
  _handle: (viewer: Viewer, request: Request, selected: Selected) => Promise<Response> | Response,
): Route {
  throw new Error("the console core has not landed");
}
