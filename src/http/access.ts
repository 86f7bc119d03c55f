// Who may call a route: the `access` of a declaration (src/http/define.ts). Each kind is two
// steps the pipeline runs around the body: `gate`, from the request's head before the body is
// read (what is known from memory is refused there, synchronously), and `admit`, with the body's
// fields (credentials that may sit in the body, a signature over it). A step may answer a
// refusal as a value (`Refused`): refusals answered from memory build no Error (capturing a stack
// trace was a fifth of the cost of a refusal of a key over its limit).
//
// The kinds here are the API's: an API key with its scope, a public route with its rate limit, a
// provider's signed callback, a feed's HTTP Basic credentials. The console's session is declared
// by the console (src/console/access.ts) with the same two steps.
import type { ErrorCode } from "../errors";
import type { PeerSource } from "./client";
import type { Access, Selected } from "./route";

/** A refusal answered as a value: the surface renders its code without an Error. */
export class Refused {
  private constructor(
    readonly code: ErrorCode,
    /** What a surface that says more than the code (the console's pages) tells the person: `foreign_host`, `cross_site`. */
    readonly why: string | null,
  ) {}
  private static readonly known = new Map<string, Refused>();
  /** One frozen instance per code (and reason). */
  static of(code: ErrorCode, why: string | null = null): Refused {
    const key = why === null ? code : `${code}:${why}`;
    let r = Refused.known.get(key);
    if (r === undefined) Refused.known.set(key, (r = Object.freeze(new Refused(code, why))));
    return r;
  }
}

export interface AccessCheck<G, Gate = unknown> {
  /** What /openapi.json says of it (src/http/openapi.ts). */
  doc: Access;
  /** The codes it can answer. */
  errors: readonly ErrorCode[];
  /**
   * The credentials may sit in the body (the API key's `api_key` field): the body's own refusals
   * (too large, malformed) are then answered after admission, so a bad key is answered as such.
   */
  inBody?: boolean;
  /** Before the body is read. Throws an AppError or answers `Refused` to refuse. */
  gate?(request: Request, server: PeerSource | null, selected: Selected): Gate | Refused | Promise<Gate | Refused>;
  /** With the body's fields (null when there is no body or it has none); absent: the gate's value is the grant. */
  admit?(gate: Gate, request: Request, fields: Record<string, unknown> | null, server: PeerSource | null): G | Refused | Promise<G | Refused>;
}

/** Anyone, with nothing counted: health, documentation, the booking page, the console's sign-in page. */
export const open = (doc: Extract<Access, { kind: "public" }> = { kind: "public" }): AccessCheck<undefined> => ({ doc, errors: [] });

/**
 * Anyone, every request counted against a limit per client: `take` counts one hit and answers the
 * grant (what the handler needs of the client, such as its hashed address) or Refused when over.
 */
export function limited<G>(
  doc: Extract<Access, { kind: "public" }>,
  take: (request: Request, server: PeerSource | null) => G | Refused | Promise<G | Refused>,
): AccessCheck<G> {
  return { doc, errors: ["rate_limited"], gate: take };
}

/**
 * A provider's signed callback (Twilio's `X-Twilio-Signature`): `verify` finds what the callback is
 * about and checks the signature with that organisation's credentials; null: 403 `forbidden`.
 */
export function signed<G>(
  doc: Extract<Access, { kind: "provider" }>,
  verify: (request: Request, fields: Record<string, unknown> | null) => Promise<G | null>,
): AccessCheck<G, undefined> {
  const forbidden = Refused.of("forbidden");
  return {
    doc,
    errors: ["forbidden"],
    admit: (_gate, request, fields) => verify(request, fields).then((g) => (g === null ? forbidden : g)),
  };
}

/** `Authorization: Basic …` as user and password, or null when absent or not Basic credentials that can be read. */
export function basicCredentials(header: string | null): { user: string; password: string } | null {
  const m = header === null ? null : /^\s*basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header);
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
