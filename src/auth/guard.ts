// Authentication, scope and rate limit for the key-authenticated routes.
//
// A plain function rather than an Elysia macro: the key may sit in the body (JSON or form), which
// these routes read themselves, and each family answers a bad key with its own code.
import type { Deps } from "../http/deps";
import { AppError, type ErrorCode } from "../http/errors";
import { LIMITS, type Family } from "../http/rate-limit";
import type { Scope } from "./keys";
import type { ApiKey } from "./service";

export interface Need {
  scope: Scope;
  family: Family;
  /** The code for a key that lacks the scope: `forbidden` on intake, `wrong_scope` elsewhere. */
  scopeError: Extract<ErrorCode, "forbidden" | "wrong_scope">;
  agent?: boolean;
}

export function presentedKey(request: Request, fields: Record<string, unknown> | null): string | null {
  const header = request.headers.get("x-api-key")?.trim();
  if (header) return header;
  const inBody = fields?.api_key;
  return typeof inBody === "string" && inBody.trim() !== "" ? inBody.trim() : null;
}

export async function authorize(
  deps: Deps,
  request: Request,
  fields: Record<string, unknown> | null,
  need: Need,
): Promise<ApiKey> {
  const plaintext = presentedKey(request, fields);
  // Over-long values cannot be keys; do not hash megabytes.
  if (!plaintext || plaintext.length > 200) throw new AppError("forbidden");
  const key = await deps.keys.resolve(plaintext);
  if (!key) throw new AppError("forbidden");
  if (!key.scopes.has(need.scope)) throw new AppError(need.scopeError);
  if (need.agent && !key.agent) throw new AppError("no_bound_agent");
  if (!(await deps.limiter.allow(key.id, LIMITS[need.family]))) throw new AppError("rate_limited");
  return key;
}
