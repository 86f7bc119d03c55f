// A webhook endpoint on 127.0.0.1: a real HTTP server that records every request it receives and
// answers as the test tells it: any status and body, a redirect, 410, or no answer at all.
import { createServer as createHttps } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer as createHttp } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  /** The TLS server name the client sent (https receivers only). */
  serverName: string | null;
  /** performance.now() when the request had been read. */
  at: number;
}

/** What to answer: a status with optional body and headers, or "hang" (never answer). */
export type Answer = { status: number; body?: string; headers?: Record<string, string> } | "hang";

export interface ReceiverOptions {
  /** Serve https with this key and certificate (self-signed: clients that check will refuse it). */
  tls?: { key: string; cert: string };
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  private answer: (r: Received) => Answer = () => ({ status: 200, body: "ok" });
  private hanging = new Set<ServerResponse>();
  private waiters: { n: number; resolve: () => void }[] = [];
  private tlsNames: string[] = [];

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
    if (opts.tls) {
      server.on("secureConnection", (s: { servername?: string | false }) => self.tlsNames.push(s.servername || ""));
      server.on("tlsClientError", (_e: unknown, s: { servername?: string | false }) => self.tlsNames.push(s.servername || ""));
    }
    return self;
  }

  /** The URL of `path` on this receiver (host 127.0.0.1 unless another is given). */
  url(path = "/hook", host = "127.0.0.1"): string {
    return `${this.scheme}://${host}:${this.port}${path}`;
  }

  /** Server names seen in TLS handshakes, including refused ones. */
  get serverNames(): readonly string[] {
    return this.tlsNames;
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

  clear(): void {
    this.received.length = 0;
    this.tlsNames.length = 0;
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
        serverName: ((req.socket as { servername?: string | false }).servername || null) as string | null,
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
      res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
      res.end(answer.body ?? "");
    });
  }
}
