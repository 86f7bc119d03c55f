// A Twilio-compatible REST server on 127.0.0.1: `POST /2010-04-01/Accounts/{sid}/Messages.json`.
// It records every request's form body and basic auth, answers like Twilio (201 with a message
// resource, or 400 with Twilio's error JSON), and can be told to fail, to answer 5xx, or never to
// answer. It also signs callbacks the way Twilio does, written here independently of the code
// under test so that a test of the verifier is not the verifier checking itself.
import { createHmac } from "node:crypto";
import { recordSecret } from "./sweep";

export interface TwilioRequest {
  path: string;
  accountSid: string;
  auth: { user: string; pass: string } | null;
  contentType: string;
  form: Record<string, string>;
  sid: string | null;
}

export type TwilioMode =
  | { kind: "ok" }
  | { kind: "error"; code: number; message: string; status?: number }
  | { kind: "server_error" }
  | { kind: "hang" };

export interface FakeTwilio {
  /** Base URL to provision as `sms.base_url`. */
  url: string;
  requests: TwilioRequest[];
  /** What the next requests get (default ok). `numbers` applies a mode only to those `To` values. */
  setMode(mode: TwilioMode): void;
  failNumber(to: string, code: number, message: string): void;
  /** Requests currently held open by `hang`. */
  hanging(): number;
  /** Resolves when `n` requests have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  reset(): void;
  stop(): Promise<void>;
}

let sidCounter = 0;
const newSid = () => "SM" + (Date.now().toString(16) + (++sidCounter).toString(16)).padStart(32, "0").slice(-32);

export async function startFakeTwilio(): Promise<FakeTwilio> {
  const requests: TwilioRequest[] = [];
  let mode: TwilioMode = { kind: "ok" };
  const perNumber = new Map<string, { code: number; message: string }>();
  const held = new Set<() => void>();
  const waiters: { n: number; resolve: () => void }[] = [];

  const answer = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(url.pathname);
      if (req.method !== "POST" || !m) return answer(404, { code: 20404, message: "The requested resource was not found", status: 404 });
      const header = req.headers.get("authorization") ?? "";
      let auth: TwilioRequest["auth"] = null;
      if (header.startsWith("Basic ")) {
        const decoded = Buffer.from(header.slice(6), "base64").toString();
        const i = decoded.indexOf(":");
        auth = { user: decoded.slice(0, i), pass: decoded.slice(i + 1) };
        recordSecret("provider credential", auth.pass);
      }
      const form = Object.fromEntries(new URLSearchParams(await req.text()));
      const record: TwilioRequest = {
        path: url.pathname,
        accountSid: decodeURIComponent(m[1]),
        auth,
        contentType: req.headers.get("content-type") ?? "",
        form,
        sid: null,
      };
      requests.push(record);
      for (const w of waiters.splice(0)) {
        if (requests.length >= w.n) w.resolve();
        else waiters.push(w);
      }
      if (!auth) return answer(401, { code: 20003, message: "Authenticate", status: 401 });
      const failing = perNumber.get(form.To ?? "");
      if (failing) return answer(400, { code: failing.code, message: failing.message, more_info: "", status: 400 });
      switch (mode.kind) {
        case "hang":
          return new Promise<Response>((resolve) => {
            const release = () => resolve(answer(503, { code: 20503, message: "stopped", status: 503 }));
            held.add(release);
          });
        case "error":
          return answer(mode.status ?? 400, { code: mode.code, message: mode.message, more_info: "", status: mode.status ?? 400 });
        case "server_error":
          return answer(500, { code: 20500, message: "Internal Server Error", status: 500 });
        case "ok": {
          record.sid = newSid();
          return answer(201, {
            sid: record.sid,
            account_sid: record.accountSid,
            to: form.To,
            from: form.From,
            body: form.Body,
            status: "queued",
            num_segments: "1",
            direction: "outbound-api",
            api_version: "2010-04-01",
            error_code: null,
            error_message: null,
          });
        }
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    setMode(m) {
      mode = m;
    },
    failNumber(to, code, message) {
      perNumber.set(to, { code, message });
    },
    hanging: () => held.size,
    waitFor(n, timeoutMs = 5000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`fake twilio: ${requests.length} of ${n} requests after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    reset() {
      requests.length = 0;
      mode = { kind: "ok" };
      perNumber.clear();
      for (const release of held) release();
      held.clear();
    },
    async stop() {
      for (const release of held) release();
      held.clear();
      await server.stop(true);
    },
  };
}

/** Twilio's callback signature, as Twilio documents it (independent of src/messages/twilio.ts). */
export function signCallback(authToken: string, fullUrl: string, params: Record<string, string>): string {
  const data = Object.keys(params)
    .sort()
    .reduce((acc, k) => acc + k + params[k], fullUrl);
  return createHmac("sha1", Buffer.from(authToken, "utf-8")).update(Buffer.from(data, "utf-8")).digest("base64");
}

/** A signed Twilio-style callback request, posted to the service. */
export async function postCallback(
  base: string,
  publicBase: string,
  pathAndQuery: string,
  authToken: string,
  params: Record<string, string>,
  opts: { signature?: string } = {},
): Promise<{ status: number; body: string; contentType: string }> {
  const signature = opts.signature ?? signCallback(authToken, publicBase + pathAndQuery, params);
  const res = await fetch(base + pathAndQuery, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, body: await res.text(), contentType: res.headers.get("content-type") ?? "" };
}
