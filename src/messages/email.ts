// Email over SMTP with nodemailer, to the org's `smtp_url` (operations.md §3). nodemailer upgrades
// with STARTTLS whenever the server offers it; options such as `tls.rejectUnauthorized=false` may
// ride in the URL's query (nodemailer's URL syntax) for servers with a private certificate.
import { createTransport } from "nodemailer";
import type { EmailConfig } from "./gates";
import type { RenderedEmail } from "./merge";
import { oneLine, PROVIDER_TIMEOUT_MS, type ProviderOutcome } from "./twilio";

/** Sends one message on its own connection; never throws, and never waits past `timeoutMs`. */
export async function sendEmail(
  cfg: EmailConfig,
  to: string,
  mail: RenderedEmail,
  timeoutMs = PROVIDER_TIMEOUT_MS,
  /** An iCalendar event attached as `appointment.ics` (an appointment automation's email). */
  ics: string | null = null,
  /** The one-click unsubscribe link of a non-transactional email (unsubscribe.ts), or null. */
  unsubscribeUrl: string | null = null,
): Promise<ProviderOutcome> {
  let transport: ReturnType<typeof createTransport>;
  try {
    transport = createTransport({
      url: cfg.smtp_url,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
      disableFileAccess: true,
      disableUrlAccess: true,
    });
  } catch (err) {
    return { ok: false, reason: "provider_unavailable", error: `SMTP settings unusable: ${oneLine(String((err as Error)?.message ?? err))}` };
  }
  const signal = AbortSignal.timeout(timeoutMs);
  let timer: ReturnType<typeof setTimeout> | undefined;
  // nodemailer's own timeouts bound each step; this bounds the whole exchange.
  const expired = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const sending = transport
    .sendMail({
      from: cfg.from,
      to,
      subject: mail.subject,
      html: mail.html,
      text: mail.text,
      ...(ics === null ? {} : { attachments: [{ filename: "appointment.ics", content: ics, contentType: "text/calendar; charset=utf-8; method=PUBLISH" }] }),
      // RFC 8058 one-click: the link alone (an HTTPS URI a mail client may POST to without asking
      // anything else), and the header that says a POST of `List-Unsubscribe=One-Click` does it.
      // One-click is defined for HTTPS only: a plain-http BASE_URL (a local installation) gets the
      // link without the one-click claim.
      ...(unsubscribeUrl === null
        ? {}
        : {
            headers: {
              "List-Unsubscribe": `<${unsubscribeUrl}>`,
              ...(unsubscribeUrl.startsWith("https://") ? { "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" } : {}),
            },
          }),
      // nodemailer cancels the SMTP session when the signal fires.
      ...({ signal } as object),
    })
    .then(
      (info: { messageId?: string; rejected?: unknown[]; response?: string }) => ({ info }),
      (err: unknown) => ({ err }),
    );
  try {
    const done = await Promise.race([sending, expired]);
    if (done === "timeout") return { ok: false, reason: "provider_timeout", error: `no answer from the SMTP server within ${timeoutMs / 1000} s` };
    if ("err" in done) return failure(done.err, timeoutMs);
    const rejected = (done.info.rejected ?? []) as unknown[];
    if (rejected.length > 0) return { ok: false, reason: "provider_error", error: `recipient rejected: ${oneLine(String(done.info.response ?? ""))}` };
    return { ok: true, providerId: String(done.info.messageId ?? ""), status: "sent" };
  } finally {
    clearTimeout(timer);
    transport.close();
  }
}

/** nodemailer's errors carry `code` (ECONNECTION, ETIMEDOUT, EAUTH, EENVELOPE, …) and `responseCode`. */
function failure(err: unknown, timeoutMs: number): ProviderOutcome {
  const e = (err ?? {}) as { code?: string; responseCode?: number; response?: string; message?: string; name?: string };
  if (e.code === "ETIMEDOUT" || e.name === "TimeoutError" || e.name === "AbortError") {
    return { ok: false, reason: "provider_timeout", error: `no answer from the SMTP server within ${timeoutMs / 1000} s` };
  }
  const detail = oneLine(e.response ?? e.message ?? String(err));
  if (typeof e.responseCode === "number") {
    // 4xx: the server cannot take it now; 5xx: refused.
    return {
      ok: false,
      reason: e.responseCode >= 500 ? "provider_error" : "provider_unavailable",
      error: `SMTP ${e.responseCode}: ${detail}`,
      code: String(e.responseCode),
    };
  }
  if (e.code === "EAUTH") return { ok: false, reason: "provider_error", error: `SMTP authentication failed: ${detail}`, code: e.code };
  return { ok: false, reason: "provider_unavailable", error: `SMTP server unreachable: ${detail}`, code: e.code };
}
