// Request bodies read by hand: the contract accepts JSON or form data on the same routes, takes the
// API key from the body as a fallback, and must answer junk with its own codes rather than 400s.

export type Body =
  | { kind: "empty" }
  | { kind: "json"; value: unknown }
  | { kind: "form"; value: Record<string, string> }
  | { kind: "malformed"; code: "malformed_json" | "malformed_body" }
  | { kind: "too_large" }
  /** The body had not arrived in full within the deadline (a trickle); the rest is never read. */
  | { kind: "timeout" };

const TIMED_OUT = Symbol("timed out");

/**
 * `read`, or TIMED_OUT once `ms` have passed; on time-out `cancel` runs and a late failure of
 * `read` (the connection is then closed under it) is swallowed. One timer per body read (about
 * 0.1 µs to set and clear, measured).
 */
function within<T>(read: Promise<T>, ms: number, cancel: () => void): Promise<T | typeof TIMED_OUT> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      read.catch(() => {});
      cancel();
      resolve(TIMED_OUT);
    }, ms);
    read.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * The body as bytes (multipart, or no declared length): in one go when its length is declared
 * (and already checked against `limit`), else streamed and null past `limit`.
 */
async function readLimited(request: Request, limit: number, declared: number): Promise<Uint8Array | null> {
  if (!request.body) return new Uint8Array(0);
  if (Number.isFinite(declared)) return new Uint8Array(await request.arrayBuffer());
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

/**
 * Reads and drops a body refused by its declared length. A proxy that sends the whole body before
 * it reads the answer (nginx buffers request bodies) saw the connection reset under it and answered
 * 502 instead of the route's 413. At most the server's ceiling (8 MiB) ever arrives, within the
 * body deadline; a failure reading it is the same refusal.
 */
async function discard(request: Request): Promise<void> {
  const reader = request.body?.getReader();
  if (!reader) return;
  try {
    for (;;) if ((await reader.read()).done) return;
  } catch {
    // the connection went away: nothing more to read
  }
}

const decoder = new TextDecoder("utf-8", { fatal: false });

function formToRecord(params: Iterable<[string, unknown]>): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of params) if (typeof v === "string") out[k] = v;
  return out;
}

export interface ReadOptions {
  /**
   * How long the body may take to arrive, from the moment the route starts reading it
   * (config.bodyDeadlineMs, BODY_DEADLINE_MS). A client that trickles a byte a second would
   * otherwise hold the request and its connection for as long as its body lasts: Bun's
   * idleTimeout counts only silence.
   */
  deadlineMs: number;
  jsonOnly?: boolean;
}

/**
 * Reads and decodes a body of at most `limit` bytes that arrives within the deadline. Never throws
 * for bad input.
 */
export async function readBody(request: Request, limit: number, opts: ReadOptions): Promise<Body> {
  const declaredType = request.headers.get("content-type") ?? "";
  const type = declaredType.toLowerCase();
  const multipart = type.startsWith("multipart/form-data");
  const length = request.headers.get("content-length");
  const declared = length === null ? NaN : Number(length);
  const deadline = opts.deadlineMs;
  if (Number.isFinite(declared) && declared > limit) {
    const drained = await within(discard(request), deadline, () => {
      request.body?.cancel().catch(() => {});
    });
    return drained === TIMED_OUT ? { kind: "timeout" } : { kind: "too_large" };
  }
  // A declared length within the limit is read in one go, decoded natively: HTTP framing holds
  // the body to it, and the byte path below costs a copy and a decoder pass more (profiled on DNI).
  if (Number.isFinite(declared) && !multipart) {
    let text: string | typeof TIMED_OUT;
    try {
      text = await within(request.text(), deadline, () => {});
    } catch {
      return { kind: "malformed", code: "malformed_body" };
    }
    if (text === TIMED_OUT) return { kind: "timeout" };
    return text.length === 0 ? { kind: "empty" } : decodeText(text, type, opts);
  }
  let bytes: Uint8Array | null | typeof TIMED_OUT;
  try {
    bytes = await within(readLimited(request, limit, declared), deadline, () => {
      request.body?.cancel().catch(() => {});
    });
  } catch {
    return { kind: "malformed", code: "malformed_body" };
  }
  if (bytes === TIMED_OUT) return { kind: "timeout" };
  if (bytes === null) return { kind: "too_large" };
  if (bytes.byteLength === 0) return { kind: "empty" };
  if (multipart) {
    try {
      // The boundary is case-sensitive: pass the header as sent.
      const form = await new Response(bytes, { headers: { "content-type": declaredType } }).formData();
      return { kind: "form", value: formToRecord(form.entries()) };
    } catch {
      return { kind: "malformed", code: "malformed_body" };
    }
  }
  return decodeText(decoder.decode(bytes), type, opts);
}

function decodeText(text: string, type: string, opts: ReadOptions): Body {
  // A JSON object or array declared as a form (curl -d '{…}' does that) is read as the JSON it is.
  if (!opts.jsonOnly && type.startsWith("application/x-www-form-urlencoded") && !/^\s*[[{]/.test(text)) {
    return { kind: "form", value: formToRecord(new URLSearchParams(text)) };
  }
  // JSON by declaration, or by sniffing when the client sent no usable content type.
  const looksJson = /^\s*[[{"]/.test(text) || type.includes("json");
  if (opts.jsonOnly || looksJson || !/^[^=&\s]+=/.test(text)) {
    try {
      return { kind: "json", value: JSON.parse(text) };
    } catch {
      return { kind: "malformed", code: "malformed_json" };
    }
  }
  return { kind: "form", value: formToRecord(new URLSearchParams(text)) };
}

/** The body's top-level fields when it is an object (JSON object or form), else null. */
export function bodyFields(body: Body): Record<string, unknown> | null {
  if (body.kind === "form") return body.value;
  if (body.kind === "json" && body.value !== null && typeof body.value === "object" && !Array.isArray(body.value)) {
    return body.value as Record<string, unknown>;
  }
  return null;
}
