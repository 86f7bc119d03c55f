// The skeleton every key-authenticated route shares: refuse a key known to be over its limit
// before anything else, read the body (the key may be in it), then within the deadline authorize,
// reject a body that could not be read, and run the operation. A GET reads no body, so when its
// header key is cached it is authorized and started in the same turn of the event loop.
import { authorize, authorizeFromMemory, refuseFromMemory, type Grant, type Need } from "../auth/guard";
import { readBody, bodyFields, type Body } from "./body";
import type { Deps } from "./deps";
import { AppError } from "./errors";
import { withDeadline } from "./respond";

/** A body that was read: what an operation receives. */
export type ReadBody = Extract<Body, { kind: "empty" | "json" | "form" }>;

export interface KeyedSpec {
  need: Need;
  /** Bytes accepted; no limit means the route reads no body (GET). */
  bodyLimit?: number;
  jsonOnly?: boolean;
}

const describe = (bytes: number) => (bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`);

type Operation = (grant: Grant, body: ReadBody) => Promise<unknown>;

const EMPTY: ReadBody = { kind: "empty" };

/** Synchronous when the refusal comes from memory, so a key hammering past its limit costs no await. */
export function runKeyed(deps: Deps, request: Request, spec: KeyedSpec, run: Operation): Response | Promise<unknown> {
  if (spec.bodyLimit) return refuseFromMemory(deps, request, spec.need) ?? readAndRun(deps, request, spec, run);
  // No body to read: a cached key is decided at once, and the operation starts in this turn.
  const grant = authorizeFromMemory(deps, request, spec.need);
  if (grant === undefined) return readAndRun(deps, request, spec, run);
  if (grant instanceof Response) return grant;
  return withDeadline(grant instanceof Promise ? grant.then((g) => run(g, EMPTY)) : run(grant, EMPTY));
}

async function readAndRun(deps: Deps, request: Request, spec: KeyedSpec, run: Operation): Promise<unknown> {
  const body: Body = spec.bodyLimit ? await readBody(request, spec.bodyLimit, { jsonOnly: spec.jsonOnly }) : EMPTY;
  return withDeadline(
    (async () => {
      const grant = await authorize(deps, request, bodyFields(body), spec.need);
      if (body.kind === "too_large") throw new AppError("body_too_large", `body over ${describe(spec.bodyLimit!)}`);
      if (body.kind === "malformed") throw new AppError(body.code);
      return run(grant, body);
    })(),
  );
}
