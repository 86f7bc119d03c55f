// The closed set of error codes, their HTTP status on each surface, and the Result type of answers
// that are values rather than errors. The contract's error table lives here and nowhere else.
// Imports nothing of the app, so every layer may use it.

/** Where an error is answered: the same code can mean a different status on each. */
export type Surface =
  /** Key-authenticated routes: intake, api_v1, KPI, calls, CTI queue. */
  | "key"
  /** The public, CORS-enabled number-insertion API. */
  | "dni"
  /** The public booking API: validation failures are HTTP 200 `{ok: false, error}`. */
  | "booking"
  /** Unauthenticated operational routes (health) and provider callbacks. */
  | "public";

const STATUS = {
  // The console (docs/console.md): no session, or a state-changing request whose Origin or CSRF
  // token is not the console's own.
  unauthenticated: 401,
  csrf_rejected: 403,
  forbidden: 403,
  wrong_scope: 403,
  no_bound_agent: 403,
  not_found: 404,
  method_not_allowed: 405,
  operation_id_conflict: 409,
  body_too_large: 413,
  // The body did not arrive within BODY_DEADLINE_MS (a trickle); the connection is closed.
  body_timeout: 408,
  bad_phone: 422,
  invalid_list: 422,
  bad_operation_id: 422,
  invalid_input: 422,
  malformed_json: 422,
  malformed_body: 422,
  too_many_points: 422,
  no_points: 422,
  no_valid_points: 422,
  rate_limited: 429,
  // DNI (api-v1.md): an unknown pool, a visitor with nothing left after sanitizing; a heartbeat
  // without a hold is an answer, not a failure.
  pool_not_found: 404,
  visitor_required: 422,
  unknown_action: 400,
  not_leased: 200,
  // Booking validation; answered with HTTP 200 on the booking surface.
  unknown_link: 422,
  slot_unavailable: 409,
  bad_epoch: 422,
  name_required: 422,
  phone_required: 422,
  token_required: 422,
  unknown_token: 404,
  not_pending: 409,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof STATUS;

/**
 * The booking API answers every validation failure, its rate limit included, with HTTP 200
 * `{ok: false, error}` (api-v1.md Errors); only these keep a status of their own there.
 */
const BOOKING_STATUS: Partial<Record<ErrorCode, number>> = {
  unknown_action: 400,
  method_not_allowed: 405,
  internal: 500,
  unavailable: 503,
};

export function statusOf(code: ErrorCode, surface: Surface = "key"): number {
  if (surface === "booking") return BOOKING_STATUS[code] ?? 200;
  return STATUS[code];
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extra?: Record<string, unknown>,
  ) {
    super(message ?? code);
  }

  status(surface: Surface = "key"): number {
    return statusOf(this.code, surface);
  }

  /** The contract's flat error body: {ok: false, error, message?, ...extra}. */
  body(): Record<string, unknown> {
    const body: Record<string, unknown> = { ok: false, error: this.code };
    if (this.message !== this.code) body.message = this.message;
    return this.extra ? { ...body, ...this.extra } : body;
  }
}

/** A command line the executable cannot act on (exit status 2). */
export class UsageError extends Error {}

/**
 * A domain failure answered as a value: `{ok: false, reason, ...}` (message gates and the like).
 * It is not thrown; the caller renders it with the status `reasonStatus` gives.
 */
export type Refusal<R extends string = string, Extra extends object = {}> = { ok: false; reason: R } & Extra;

export type Result<T extends object, R extends string = string, Extra extends object = {}> = ({ ok: true } & T) | Refusal<R, Extra>;

/** Billing gate reasons are HTTP 402 (api-v1.md Errors); every other reason is HTTP 200. */
const PAYMENT_REQUIRED = new Set([
  "billing_not_configured",
  "billing_unavailable",
  "billing_frozen",
  "subscription_required",
  "insufficient_credits",
]);

export const reasonStatus = (reason: string): 200 | 402 => (PAYMENT_REQUIRED.has(reason) ? 402 : 200);
