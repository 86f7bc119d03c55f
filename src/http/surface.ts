// How a route's answers are rendered: the `surface` of a declaration (src/http/define.ts). Every
// error of a route — a refusal of its access, a body or input it cannot use, a failure of its
// handler, the database away — is rendered here once, with the status the code has on the surface
// (src/errors.ts) and the surface's headers (CORS on the public APIs). The console's and the
// booking page's HTML surfaces are declared by their features with the same shape.
import type { ErrorCode, Surface } from "../errors";
import type { PeerSource } from "./client";
import { errorOf, errorResponse, json } from "./respond";

export interface SurfaceRender {
  /** The status table its codes are answered with (src/errors.ts). */
  name: Surface;
  /**
   * Errors are pages, not the contract's JSON bodies (the console's, the booking page's): the route's
   * answers describe them, and /openapi.json lists no error codes for it.
   */
  pages?: boolean;
  /** A refusal known by its code (and the reason a page may give); no Error was built for it. */
  refuse(code: ErrorCode, request: Request, server: PeerSource | null, why: string | null): Response | Promise<Response>;
  /** Anything thrown or rejected: an AppError's code, a database failure (503), else a logged 500. */
  error(err: unknown, request: Request, server: PeerSource | null): Response | Promise<Response>;
  /** A handler's value that is not a Response. */
  value(value: unknown, request: Request, grant: unknown): Response | Promise<Response>;
}

/** A JSON surface: `{ok: false, error, message?}` bodies, with `headers` on every answer of the route, errors included. */
export function jsonSurface(name: Surface, headers?: Readonly<Record<string, string>>): SurfaceRender {
  const h = headers && { ...headers };
  return {
    name,
    refuse: (code) => errorOf(code, name, h),
    error: (err) => errorResponse(err, name, h),
    value: (value) => json(value, 200, h),
  };
}

/** The API's keyed routes (intake, api_v1, KPI, calls, the CTI queue). */
export const keySurface = jsonSurface("key");
/** Operational routes and provider callbacks. */
export const publicSurface = jsonSurface("public");
