// A webhook endpoint on 127.0.0.1: a real HTTP server that records every request it receives and
// answers as the test tells it: any status and body, a redirect, 410, or no answer at all.
import { createServer as createHttps } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer as createHttp } from "node:http";
import { createServer as createTcp, type AddressInfo } from "node:net";

export interface Received {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  /** performance.now() when the request had been read. */
  at: number;
}

/** What to answer: a status with optional body and headers (after `delayMs`), or "hang" (never answer). */
export type Answer = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number } | "hang";

export interface ReceiverOptions {
  /** Serve https with this key and certificate (self-signed: clients that check will refuse it). */
  tls?: { key: string; cert: string };
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  private answer: (r: Received) => Answer = () => ({ status: 200, body: "ok" });
  private hanging = new Set<ServerResponse>();
  private waiters: { n: number; resolve: () => void }[] = [];

  private constructor(
    private server: ReturnType<typeof createHttp>,
    readonly port: number,
    readonly scheme: "http" | "https",
  ) {}

  static async start(opts: ReceiverOptions = {}): Promise<WebhookReceiver> {
    let self!: WebhookReceiver;
    const handler = (req: IncomingMessage, res: ServerResponse) => self.handle(req, res);
    const server = opts.tls ? createHttps({ key: opts.tls.key, cert: opts.tls.cert }, handler) : createHttp(handler);
    // Keep-alive as a real endpoint would; the delivery client pools connections.
    server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    self = new WebhookReceiver(server as ReturnType<typeof createHttp>, (server.address() as AddressInfo).port, opts.tls ? "https" : "http");
    return self;
  }

  /** The URL of `path` on this receiver (host 127.0.0.1 unless another is given). */
  url(path = "/hook", host = "127.0.0.1"): string {
    return `${this.scheme}://${host}:${this.port}${path}`;
  }

  /** Sets how every following request is answered. */
  respond(fn: Answer | ((r: Received) => Answer)): void {
    this.answer = typeof fn === "function" ? fn : () => fn;
  }

  /** Requests received at `path`. */
  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Resolves once `n` requests in all have arrived; rejects after `ms`. */
  waitFor(n: number, ms = 5000): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver: ${this.received.length} of ${n} requests after ${ms} ms`)), ms);
      this.waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  /** Answers every request left hanging with `status`. */
  release(status = 503): void {
    for (const res of this.hanging) {
      res.writeHead(status);
      res.end();
    }
    this.hanging.clear();
  }

  clear(): void {
    this.received.length = 0;
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      const r: Received = {
        path: (req.url ?? "/").split("?")[0],
        method: req.method ?? "",
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: performance.now(),
      };
      this.received.push(r);
      for (const w of this.waiters.filter((w) => this.received.length >= w.n)) w.resolve();
      this.waiters = this.waiters.filter((w) => this.received.length < w.n);
      const answer = this.answer(r);
      if (answer === "hang") {
        this.hanging.add(res);
        res.on("close", () => this.hanging.delete(res));
        return;
      }
      const send = () => {
        res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
        res.end(answer.body ?? "");
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  }
}

/** A self-signed certificate for hooks.test (valid to 2126): a client that checks certificates refuses it. */
export const SELF_SIGNED = {
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgDeBQSdhmQJi+5ywd
eGb3g4LcYK/HslX8ajlE2/ecIEOhRANCAATmNtk9MQ7GmtDJZE4NUp7V1tAc+Ik1
WhEr86hbgigjVyqvstukYCOpzMJWatrkfcPeegJ5GMQS+zWPhR/LCxGB
-----END PRIVATE KEY-----
`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBmDCCAT6gAwIBAgIUffNfL0pFiEIy7DOjYTNFQGWXbSUwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKaG9va3MudGVzdDAgFw0yNjExMjMxMTM3MDFaGA8yMTI2MTAz
MDExMzcwMVowFTETMBEGA1UEAwwKaG9va3MudGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABOY22T0xDsaa0MlkTg1SntXW0Bz4iTVaESvzqFuCKCNXKq+y26Rg
I6nMwlZq2uR9w956AnkYxBL7NY+FH8sLEYGjajBoMB0GA1UdDgQWBBSnr6P+SYO+
J0gLlOxUwA/9yHlowDAfBgNVHSMEGDAWgBSnr6P+SYO+J0gLlOxUwA/9yHlowDAP
BgNVHRMBAf8EBTADAQH/MBUGA1UdEQQOMAyCCmhvb2tzLnRlc3QwCgYIKoZIzj0E
AwIDSAAwRQIhAPl5BMRxSn5pQtw+7vfDaOaCtbE8tLjMOrdFJEQkL190AiAjBZzT
Sg6bHdUNvd9SngLN/SIUwSYQZszVnHVaj45VuQ==
-----END CERTIFICATE-----
`,
};

/**
 * A TCP server that reads each TLS ClientHello, records the server name (SNI) in it, and hangs up:
 * what name a client asked for, whatever it would have made of the certificate.
 */
export async function startSniProbe(): Promise<{ port: number; names: string[]; stop(): Promise<void> }> {
  const names: string[] = [];
  const server = createTcp((socket) => {
    let buf = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const name = clientHelloServerName(buf);
      if (name !== undefined) {
        names.push(name ?? "");
        socket.destroy();
      }
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    names,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The SNI host name of a complete ClientHello in `b`; null when it has none; undefined while incomplete. */
function clientHelloServerName(b: Buffer): string | null | undefined {
  if (b.length < 5) return undefined;
  const recordEnd = 5 + b.readUInt16BE(3);
  if (b[0] !== 0x16 || b.length < recordEnd) return b[0] !== 0x16 ? null : undefined;
  let p = 5 + 4 + 2 + 32; // handshake header, client version, random
  p += 1 + b[p]; // session id
  p += 2 + b.readUInt16BE(p); // cipher suites
  p += 1 + b[p]; // compression methods
  const extEnd = p + 2 + b.readUInt16BE(p);
  for (p += 2; p + 4 <= extEnd; ) {
    const type = b.readUInt16BE(p);
    const len = b.readUInt16BE(p + 2);
    if (type === 0) {
      const nameLen = b.readUInt16BE(p + 4 + 3);
      return b.subarray(p + 4 + 5, p + 4 + 5 + nameLen).toString("ascii");
    }
    p += 4 + len;
  }
  return null;
}
