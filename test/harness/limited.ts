// A burst against a key's hourly limit, judged the same way wherever it is sent.
import { expect } from "bun:test";
import type { Reply } from "./app";

/**
 * `replies` to a burst of requests under an hourly limit of `limit`: each admitted (`admitted`,
 * the route's own answer), refused 429 rate_limited (without Retry-After), or, on a machine busy
 * enough to keep the instance from running for a second, 503 unavailable (past the request
 * deadline, as the contract allows: seen in full runs beside other work). Never more admitted than
 * the limit; exactly the limit, and the rest refused, when every answer came in time. Answers
 * whether they all did, for checks that hold only then.
 */
export function expectLimited(replies: readonly Reply[], limit: number, admitted: number): boolean {
  const count = (status: number) => replies.filter((r) => r.status === status).length;
  const [ok, refused, slow] = [count(admitted), count(429), count(503)];
  expect({ others: replies.filter((r) => ![admitted, 429, 503].includes(r.status)).map((r) => r.status) }).toEqual({ others: [] });
  for (const r of replies.filter((r) => r.status === 429)) {
    expect(r.body).toEqual({ ok: false, error: "rate_limited" });
    expect(r.headers.get("retry-after")).toBeNull();
  }
  for (const r of replies.filter((r) => r.status === 503)) expect(r.body).toMatchObject({ ok: false, error: "unavailable" });
  expect(ok).toBeLessThanOrEqual(limit);
  if (slow === 0) expect({ ok, refused }).toEqual({ ok: limit, refused: replies.length - limit });
  return slow === 0;
}
