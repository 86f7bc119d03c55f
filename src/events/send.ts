// One HTTP attempt of a webhook: resolve and check the target, POST the signed body, keep the
// status and the start of the response. Never throws: every outcome is an attempt to record.
import { VERSION } from "../version";
import { Refused, resolveTarget, type Lookup } from "./target";

export interface SendOptions {
  allowPrivate: boolean;
  lookup: Lookup;
  /** The whole attempt, DNS to the end of the kept response: 15 s. */
  timeoutMs: number;
  /** Bytes of the response body kept: 2 KB. */
  responseCap: number;
}

export interface AttemptOutcome {
  /** HTTP status, null when no response arrived. */
  status: number | null;
  /** Why the attempt did not succeed, null on 2xx. */
  error: string | null;
  /** The start of the response body, at most responseCap bytes. */
  response: string | null;
  /** The address connected to, null when refused before connecting. */
  address: string | null;
  durationMs: number;
}

export const isSuccess = (o: AttemptOutcome) => o.status !== null && o.status >= 200 && o.status < 300;

const TLS_CODES = /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/;

function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof Refused) return err.message;
  const e = err as { name?: unknown; code?: unknown; message?: unknown };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") {
    return `timeout: no complete response within ${timeoutMs / 1000} s`;
  }
  const code = typeof e?.code === "string" ? e.code : "";
  const message = typeof e?.message === "string" ? e.message.split(". For more information")[0] : String(err);
  if (TLS_CODES.test(code)) return `TLS: ${code}${message && message !== code ? ` (${message})` : ""}`;
  return `connection: ${code || message}${code && message && !message.startsWith(code) ? ` (${message})` : ""}`;
}

/**
 * Reads at most `cap` bytes of the body, then stops reading (the rest is never downloaded). A body
 * cut short by the timeout or the connection keeps what arrived: the status has already answered.
 */
async function excerpt(res: Response, cap: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < cap) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // keep the part that arrived
  } finally {
    reader.cancel().catch(() => {});
  }
  const bytes = Buffer.concat(chunks).subarray(0, cap);
  // A cut multi-byte character decodes as U+FFFD; PostgreSQL text cannot hold NUL.
  return new TextDecoder().decode(bytes).replace(/\u0000/g, "");
}

export async function sendAttempt(
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: SendOptions,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let address: string | null = null;
  const done = (o: Omit<AttemptOutcome, "durationMs" | "address">): AttemptOutcome => ({
    ...o,
    address,
    durationMs: Math.round(performance.now() - started),
  });
  try {
    const target = await Promise.race([
      resolveTarget(url, opts.allowPrivate, opts.lookup),
      new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
    ]);
    address = target.address;
    const res = await fetch(target.fetchUrl, {
      method: "POST",
      body,
      signal,
      redirect: "manual",
      headers: {
        ...headers,
        host: target.host,
        "content-type": "application/json",
        "user-agent": `Leadline-Webhooks/${VERSION}`,
        ...(target.authorization ? { authorization: target.authorization } : {}),
      },
      ...(target.serverName ? { tls: { serverName: target.serverName } } : {}),
    });
    const response = await excerpt(res, opts.responseCap);
    const status = res.status;
    if (status >= 200 && status < 300) return done({ status, error: null, response });
    let error = `HTTP ${status}`;
    if (status === 410) error = "HTTP 410 Gone: the endpoint is disabled";
    else if (status >= 300 && status < 400) {
      const location = res.headers.get("location");
      error = `HTTP ${status}: redirect${location ? ` to ${location.slice(0, 200)}` : ""} not followed`;
    }
    return done({ status, error, response });
  } catch (err) {
    return done({ status: null, error: describeFailure(err, opts.timeoutMs), response: null });
  }
}
