// Messaging over HTTP: POST r=messages on api_v1, and Twilio's callbacks (operations.md §4).
import { Type as t } from "@sinclair/typebox";
import { signed } from "../http/access";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { API_V1_PATH, BODY_LIMIT, keyAccess } from "../http/keyed";
import { objectFields, type Declaration, type Input, type PathRoute, type Route } from "../http/route";
import { rawJson } from "../http/respond";
import { keySurface, publicSurface } from "../http/surface";
import { applyStatusCallback, recordInboundSms, verifyInbound, verifyStatus, type CallbackEnv, type TwilioCallback } from "./callbacks";
import { answerOf, MessageResultSchema, sendInput } from "./model";
import { messageProbes, sendDeadline, sendEnv, sendFromApi } from "./service";

/** POST r=messages: the Message result, with HTTP 402 for billing reasons. */
export function messageSendRoutes(deps: Deps): Route[] {
  const env = sendEnv(deps);
  const probes = messageProbes(deps.sql, deps.limits, deps.config.deadlineMs);
  return [
    defineRoute(
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
        access: keyAccess(deps, { scope: "messages:write", limit: "api_v1", scopeError: "wrong_scope", countInRead: true }),
        surface: keySurface,
        body: { input: sendInput, limit: BODY_LIMIT, form: true },
        // A send may wait on its provider (bounded); its database steps keep the usual deadline.
        deadlineMs: sendDeadline(env),
        answers: {
          200: { description: "Sent, queued, stored (a note), or refused by a gate", schema: MessageResultSchema },
          402: { description: "Refused by the billing gate", schema: MessageResultSchema },
        },
        errors: ["bad_operation_id", "invalid_input", "not_found", "operation_id_conflict"],
      },
      async ({ body }, { grant }) => {
        const answer = answerOf(await sendFromApi(deps.sql, probes, grant.hit!, grant.actor, body, deps.clock.now(), env));
        return rawJson(answer.text, answer.status);
      },
    ),
  ];
}

const CALLBACK_BODY_LIMIT = 64 * 1024;
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
const TWIML_HEADERS = { "content-type": "text/xml; charset=utf-8" };

/** The form fields Twilio posts; every one is signed, so every one is kept as sent. */
const CallbackForm = t.Record(t.String(), t.String(), { description: "Twilio's form fields (MessageSid, MessageStatus, From, To, Body, …)" });

/** Its string fields, the only ones a form has; anything unreadable has none (and then fails the signature). */
const callbackParams = (value: unknown): [string, string][] =>
  Object.entries(objectFields(value)).filter((e): e is [string, string] => typeof e[1] === "string");

const callbackInput: Input<[string, string][]> = { schema: CallbackForm, read: callbackParams };

/** The callback as Twilio signed it: the path and query received, the form's fields, the signature. */
const callbackOf = (request: Request, fields: Record<string, unknown> | null): TwilioCallback => {
  const url = new URL(request.url);
  return { pathAndQuery: url.pathname + url.search, params: callbackParams(fields), signature: request.headers.get("x-twilio-signature") };
};

const TWILIO = { kind: "provider", signature: "X-Twilio-Signature", signedWith: "the org's Twilio auth token" } as const;

/** A provider callback: its form read, then 403 to anything not signed by the org concerned. */
function callbackRoute<V>(
  deps: Deps,
  decl: Pick<Declaration, "id" | "summary" | "description" | "path" | "answers">,
  verify: (sql: Deps["sql"], env: CallbackEnv, cb: TwilioCallback) => Promise<V | null>,
  act: (verified: V) => Promise<Response>,
): Route {
  const env: CallbackEnv = { baseUrl: deps.config.baseUrl, secretKey: deps.config.secretKey };
  return defineRoute(
    deps,
    {
      ...decl,
      tag: "Provider callbacks",
      method: "POST",
      access: signed(TWILIO, (request, fields) => verify(deps.sql, env, callbackOf(request, fields))),
      surface: publicSurface,
      // Anything but a form has no fields, and so fails the signature: 403, as a forgery.
      body: { input: callbackInput, limit: CALLBACK_BODY_LIMIT, form: true, malformed: "absent" },
    },
    (_input, { grant }) => act(grant),
  );
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
    verifyStatus,
    async (verified) => {
      await applyStatusCallback(deps.sql, verified, deps.clock.now());
      return new Response(null, { status: 200 });
    },
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
    verifyInbound,
    async (verified) => {
      await recordInboundSms(deps.sql, verified, deps.clock.now());
      return new Response(EMPTY_TWIML, { status: 200, headers: TWIML_HEADERS });
    },
  ),
];

/** The callbacks take POST only. */
export const messageCallbackPaths: PathRoute[] = ["/hooks/sms_status.php", "/hooks/sms_inbound.php"].map((path) => ({
  path,
  surface: "public",
  otherMethods: "method_not_allowed",
}));
