// An SMTP server on 127.0.0.1 (smtp-server) whose mail is parsed with mailparser, so tests assert
// subject, escaping, alternatives and recipients on what really went over the wire. By default it
// offers STARTTLS with smtp-server's built-in self-signed certificate and accepts any login.
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer } from "smtp-server";
import { recordSecret } from "./sweep";

export interface ReceivedMail {
  envelope: { from: string; to: string[] };
  /** Whether the session had been upgraded with STARTTLS when the mail was sent. */
  secure: boolean;
  user: string | null;
  raw: string;
  parsed: ParsedMail;
}

export interface FakeSmtpOptions {
  /** Offer STARTTLS (default true). */
  starttls?: boolean;
}

export interface FakeSmtp {
  port: number;
  /** An `smtp_url` for this server (trusting its self-signed certificate). */
  url(user?: string, pass?: string): string;
  mails: ReceivedMail[];
  /** Recipients refused at RCPT TO with a 550. */
  rejectRecipient(address: string): void;
  /** Never answer the end of DATA (a server that hangs). */
  setHang(on: boolean): void;
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  reset(): void;
  stop(): Promise<void>;
}

export async function startFakeSmtp(opts: FakeSmtpOptions = {}): Promise<FakeSmtp> {
  const mails: ReceivedMail[] = [];
  const rejected = new Set<string>();
  let hang = false;
  const held: (() => void)[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];

  const server = new SMTPServer({
    secure: false,
    hideSTARTTLS: opts.starttls === false,
    authOptional: true,
    logger: false,
    disableReverseLookup: true,
    onAuth(auth, _session, callback) {
      recordSecret("provider credential", auth.password);
      callback(null, { user: auth.username });
    },
    onRcptTo(address, _session, callback) {
      if (rejected.has(address.address.toLowerCase())) {
        const err = new Error("5.1.1 mailbox unavailable") as Error & { responseCode: number };
        err.responseCode = 550;
        return callback(err);
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", async () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        if (hang) {
          held.push(() => callback(new Error("stopped")));
          return;
        }
        const parsed = await simpleParser(raw);
        mails.push({
          envelope: {
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((r) => r.address),
          },
          secure: session.secure,
          user: typeof session.user === "string" ? session.user : null,
          raw,
          parsed,
        });
        for (const w of waiters.splice(0)) {
          if (mails.length >= w.n) w.resolve();
          else waiters.push(w);
        }
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as { port: number }).port;

  return {
    port,
    url(user = "mailer", pass = "secret") {
      recordSecret("provider credential", pass);
      return `smtp://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${port}/?tls.rejectUnauthorized=false`;
    },
    mails,
    rejectRecipient: (address) => void rejected.add(address.toLowerCase()),
    setHang(on) {
      hang = on;
      if (!on) for (const release of held.splice(0)) release();
    },
    waitFor(n, timeoutMs = 5000) {
      if (mails.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`fake smtp: ${mails.length} of ${n} mails after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    reset() {
      mails.length = 0;
      rejected.clear();
      hang = false;
      for (const release of held.splice(0)) release();
    },
    async stop() {
      for (const release of held.splice(0)) release();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
