// Routes Bun serves itself: the hottest paths (DNI, api_v1) are handed to Bun.serve's `routes`
// through Elysia's `serve` option, so they are answered without building Elysia's request context
// (measured A/B at about 3 µs of a 25 µs refusal). Every other method of their paths still falls
// through to the Elysia app, which answers them as before. Every route renders its own
// errors (src/http/define.ts), so a native handler needs nothing of Elysia.
import type { PeerSource } from "./client";

export type NativeHandler = (request: Request, server: PeerSource) => Response | Promise<Response>;
/** Bun's routes table, built by mountRoutes (src/http/mount.ts), which refuses a path and method served twice. */
export type NativeRoutes = Record<string, { GET?: NativeHandler; POST?: NativeHandler }>;
