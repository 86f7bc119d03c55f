// The closed set of error codes and their HTTP statuses: the contract's error table in one place.

const statusOf = {
  forbidden: 403,
  wrong_scope: 403,
  no_bound_agent: 403,
  not_found: 404,
  method_not_allowed: 405,
  body_too_large: 413,
  bad_phone: 422,
  invalid_list: 422,
  bad_operation_id: 422,
  invalid_input: 422,
  malformed_json: 422,
  malformed_body: 422,
  too_many_points: 422,
  no_points: 422,
  no_valid_points: 422,
  operation_id_conflict: 409,
  rate_limited: 429,
  unavailable: 503,
  not_implemented: 501,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof statusOf;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extra?: Record<string, unknown>,
  ) {
    super(message ?? code);
  }

  get status(): number {
    return statusOf[this.code];
  }

  /** The contract's flat error body: {ok: false, error, message?, ...extra}. */
  body(): Record<string, unknown> {
    const body: Record<string, unknown> = { ok: false, error: this.code };
    if (this.message !== this.code) body.message = this.message;
    return this.extra ? { ...body, ...this.extra } : body;
  }
}
