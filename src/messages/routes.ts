// Messaging over HTTP: POST r=messages on api_v1, and Twilio's callbacks (operations.md §4).
import { Elysia } from "elysia";
import { AppError } from "../errors";
import { bodyFields, readBody } from "../http/body";
import type { Deps } from "../http/deps";
import { API_V1_PATH, BODY_LIMIT, keyedRoute } from "../http/keyed";
import type { Route } from "../http/route";
import { errorOf, errorResponse, rawJson } from "../http/respond";
import { inboundSms, statusCallback, type CallbackAnswer, type CallbackEnv, type TwilioCallback } from "./callbacks";
import { answerOf, MessageResultSchema, sendInput } from "./model";
import { messageProbes, sendDeadline, sendEnv, sendFromApi } from "./service";

/** POST r=messages: the Message result, with HTTP 402 for billing reasons. */
export function messageSendRoutes(deps: Deps): Route[] {
  const env = sendEnv(deps.config);
  const probes = messageProbes(deps.sql, deps.limits);
  return [
    keyedRoute(
      deps,
      {
        id: "sendMessage",
        tag: "Messages",
        summary: "Send an SMS or an email, or store a note, for a lead",
        description:
          "Through the same path as the console and automations: consent, quiet hours, idempotency and billing. A note " +
          "calls no provider and is never billed. Domain failures come back as HTTP 200 with `ok: false` and a `reason` " +
          "(`empty_body`, `no_contact`, `no_consent`, `opted_out`, `provider_not_configured`, `provider_error`, …); " +
          "billing reasons (`billing_not_configured`, `billing_unavailable`, `billing_frozen`, `subscription_required`, " +
          "`insufficient_credits`) as HTTP 402. A send inside the recipient's quiet hours is queued: `ok: true` with " +
          "`defer_until`. `operation_id` is the idempotency identity: a retry replays the first answer; reusing it for a " +
          "different send is `operation_id_conflict`.",
        method: "POST",
        path: API_V1_PATH,
        select: { param: "r", value: "messages" },
        access: { kind: "key", scope: "messages:write", limit: "api_v1", scopeError: "wrong_scope" },
        countInRead: true,
        body: { input: sendInput, limit: BODY_LIMIT, form: true },
        // A send may wait on its provider (bounded); its database steps keep the usual deadline.
        deadlineMs: sendDeadline(env),
        answers: {
          200: { description: "Sent, queued, stored (a note), or refused by a gate", schema: MessageResultSchema },
          402: { description: "Refused by the billing gate", schema: MessageResultSchema },
        },
        errors: ["bad_operation_id", "invalid_input", "not_found", "operation_id_conflict"],
      },
      async (grant, input) => {
        const answer = answerOf(await sendFromApi(deps.sql, probes, grant.hit!, grant.actor, input, deps.clock.now(), env));
        return rawJson(answer.text, answer.status);
      },
    ),
  ];
}

const CALLBACK_BODY_LIMIT = 64 * 1024;
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

type Handler = (sql: Deps["sql"], env: CallbackEnv, cb: TwilioCallback, now: number) => Promise<CallbackAnswer>;

/** Reads a provider callback (form fields) and answers 403 to anything not signed by the org concerned. */
async function callback(deps: Deps, request: Request, handle: Handler, ok: () => Response): Promise<Response> {
  try {
    const body = await readBody(request, CALLBACK_BODY_LIMIT, { deadlineMs: deps.config.bodyDeadlineMs });
    if (body.kind === "timeout") return errorOf("body_timeout", "public");
    if (body.kind === "too_large") return errorOf("body_too_large", "public");
    const fields = bodyFields(body) ?? {};
    const params = Object.entries(fields).filter((e): e is [string, string] => typeof e[1] === "string");
    const url = new URL(request.url);
    const cb: TwilioCallback = { pathAndQuery: url.pathname + url.search, params, signature: request.headers.get("x-twilio-signature") };
    const answer = await handle(deps.sql, { baseUrl: deps.config.baseUrl, secretKey: deps.config.secretKey }, cb, deps.clock.now());
    return answer === "ok" ? ok() : errorOf("forbidden", "public");
  } catch (err) {
    return errorResponse(err, "public");
  }
}

/** POST /hooks/sms_status.php and /hooks/sms_inbound.php. */
export const messageRoutes = (deps: Deps) =>
  new Elysia({ name: "messages" })
    .post("/hooks/sms_status.php", ({ request }) => callback(deps, request, statusCallback, () => new Response(null, { status: 200 })), {
      parse: "none",
    })
    .post(
      "/hooks/sms_inbound.php",
      ({ request }) =>
        callback(deps, request, inboundSms, () => new Response(EMPTY_TWIML, { status: 200, headers: { "content-type": "text/xml; charset=utf-8" } })),
      { parse: "none" },
    )
    .all("/hooks/sms_status.php", () => {
      throw new AppError("method_not_allowed");
    })
    .all("/hooks/sms_inbound.php", () => {
      throw new AppError("method_not_allowed");
    });
