// Messaging over HTTP: POST r=messages on api_v1, and Twilio's callbacks (operations.md §4).
import { Type as t } from "@sinclair/typebox";
import { bodyFields, readBody } from "../http/body";
import type { Deps } from "../http/deps";
import { API_V1_PATH, BODY_LIMIT, keyedRoute } from "../http/keyed";
import { guarded } from "../http/native";
import { objectFields, type Declaration, type Input, type PathRoute, type Route } from "../http/route";
import { errorOf, rawJson } from "../http/respond";
import { inboundSms, statusCallback, type CallbackAnswer, type CallbackEnv, type TwilioCallback } from "./callbacks";
import { answerOf, MessageResultSchema, sendInput } from "./model";
import { messageProbes, sendDeadline, sendEnv, sendFromApi } from "./service";

/** POST r=messages: the Message result, with HTTP 402 for billing reasons. */
export function messageSendRoutes(deps: Deps): Route[] {
  const env = sendEnv(deps);
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
          "(`empty_body`, `no_contact`, `do_not_contact`, `no_consent`, `opted_out`, `provider_not_configured`, `provider_error`, …); " +
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
const TWIML_HEADERS = { "content-type": "text/xml; charset=utf-8" };

type Handler = (sql: Deps["sql"], env: CallbackEnv, cb: TwilioCallback, now: number) => Promise<CallbackAnswer>;

/** The form fields Twilio posts; every one is signed, so every one is kept as sent. */
const CallbackForm = t.Record(t.String(), t.String(), { description: "Twilio's form fields (MessageSid, MessageStatus, From, To, Body, …)" });

/** Its string fields, the only ones a form has; anything unreadable has none (and then fails the signature). */
const callbackInput: Input<[string, string][]> = {
  schema: CallbackForm,
  read: (value) => Object.entries(objectFields(value)).filter((e): e is [string, string] => typeof e[1] === "string"),
};

/** Reads a provider callback (form fields) and answers 403 to anything not signed by the org concerned. */
function callbackRoute(deps: Deps, decl: Pick<Declaration, "id" | "summary" | "description" | "path" | "answers">, handle: Handler, ok: () => Response): Route {
  const run = guarded<null>(
    async (request) => {
      const body = await readBody(request, CALLBACK_BODY_LIMIT, { deadlineMs: deps.config.bodyDeadlineMs });
      if (body.kind === "timeout") return errorOf("body_timeout", "public");
      if (body.kind === "too_large") return errorOf("body_too_large", "public");
      const params = callbackInput.read(bodyFields(body), deps.clock.now());
      const url = new URL(request.url);
      const cb: TwilioCallback = { pathAndQuery: url.pathname + url.search, params, signature: request.headers.get("x-twilio-signature") };
      const answer = await handle(deps.sql, { baseUrl: deps.config.baseUrl, secretKey: deps.config.secretKey }, cb, deps.clock.now());
      return answer === "ok" ? ok() : errorOf("forbidden", "public");
    },
    "public",
  );
  return {
    ...decl,
    tag: "Provider callbacks",
    method: "POST",
    access: { kind: "provider", signature: "X-Twilio-Signature", signedWith: "the org's Twilio auth token" },
    body: { schema: CallbackForm, form: true, limit: CALLBACK_BODY_LIMIT },
    // forbidden: not signed by the organisation concerned (or no such organisation).
    errors: ["forbidden", "body_too_large", "body_timeout", "unavailable"],
    handle: (request) => run(request, null),
  };
}

/** POST /hooks/sms_status.php and /hooks/sms_inbound.php. */
export const messageCallbackRoutes = (deps: Deps): Route[] => [
  callbackRoute(
    deps,
    {
      id: "smsStatusCallback",
      summary: "Twilio's delivery status callback",
      description: "Moves the message's status forward; the signature is checked against the message's organisation.",
      path: "/hooks/sms_status.php",
      answers: { 200: { description: "Recorded (empty body)" } },
    },
    statusCallback,
    () => new Response(null, { status: 200 }),
  ),
  callbackRoute(
    deps,
    {
      id: "smsInboundCallback",
      summary: "Twilio's inbound SMS webhook",
      description: "Stores the message on the newest lead with the sender's number; STOP/START keywords change SMS consent.",
      path: "/hooks/sms_inbound.php",
      answers: { 200: { description: "Empty TwiML", contentType: "text/xml" } },
    },
    inboundSms,
    () => new Response(EMPTY_TWIML, { status: 200, headers: TWIML_HEADERS }),
  ),
];

/** The callbacks take POST only. */
export const messageCallbackPaths: PathRoute[] = ["/hooks/sms_status.php", "/hooks/sms_inbound.php"].map((path) => ({
  path,
  surface: "public",
  otherMethods: "method_not_allowed",
}));
