// Routes Bun serves itself: the hottest paths (DNI, api_v1) are handed to Bun.serve's `routes`
// through Elysia's `serve` option, so they are answered without building Elysia's request context
// (measured A/B at about 3 µs of a 25 µs refusal). Every other method of their paths still falls
// through to the Elysia app, which answers them as before. A native handler renders its own
// errors, through the same error renderer as Elysia's onError.
import type { Surface } from "../errors";
import type { PeerSource } from "./client";
import { errorResponse, json } from "./respond";

export type NativeHandler = (request: Request, server: PeerSource) => Response | Promise<Response>;
/** Bun's routes table, built by mountRoutes (src/http/mount.ts), which refuses a path and method served twice. */
export type NativeRoutes = Record<string, { GET?: NativeHandler; POST?: NativeHandler }>;

/** What an operation returned, as an answer: a Response as it is, anything else as JSON. */
export const toResponse = (value: unknown): Response => (value instanceof Response ? value : json(value));

/**
 * A handler whose exceptions and rejections are answered by the error renderer on `surface`,
 * as Elysia's onError answers them for its own routes; any value but a Response is sent as JSON.
 */
export function guarded<A = PeerSource>(
  handler: (request: Request, arg: A) => unknown,
  surface: Surface = "key",
  headers?: Record<string, string>,
): (request: Request, arg: A) => Response | Promise<Response> {
  const fail = (err: unknown) => errorResponse(err, surface, headers);
  return (request, arg) => {
    try {
      const out = handler(request, arg);
      if (out instanceof Response) return out;
      return out instanceof Promise ? out.then(toResponse, fail) : toResponse(out);
    } catch (err) {
      return fail(err);
    }
  };
}
