// The console's entries of the cross-organization table (test/cross-org.test.ts), keyed by declared
// route id: how each is asked, what it answers without a session or without the role it needs,
// and the pairs of requests (another organization's id, a missing one) that must be answered alike.
import type { Sql } from "../../src/db/client";
import type { ConsoleRoute } from "./auth-matrix";
import { makeUser, signIn, type ConsoleClient } from "./console";
import { REPORT_ROUTES } from "./console-matrix-reports";
import { OPERATIONS_ROUTES } from "./console-matrix-operations";
import { SETTINGS_ROUTES } from "./console-matrix-settings";
import { POOL_ROUTES } from "./console-matrix-pools";

const sessions = new Map<string, Promise<ConsoleClient>>();

/** A signed-in client of organization 1 (Acme) with `role`, made once per server. */
export function acmeClient(base: string, sql: Sql, role: "manager" | "agent"): Promise<ConsoleClient> {
  const key = `${base} ${role}`;
  let c = sessions.get(key);
  if (!c) {
    c = makeUser(sql, { role, orgId: 1 }).then((u) => signIn(base, u.email, u.password));
    sessions.set(key, c);
  }
  return c;
}

const headersOf = async (c: Promise<ConsoleClient>, post = false): Promise<Record<string, string>> => {
  const client = await c;
  return post ? { cookie: client.cookie, "x-csrf-token": client.csrf } : { cookie: client.cookie };
};

export const asManager = (base: string, sql: Sql) => headersOf(acmeClient(base, sql, "manager"));
export const asAgent = (base: string, sql: Sql) => headersOf(acmeClient(base, sql, "agent"));
export const asManagerPost = (base: string, sql: Sql) => headersOf(acmeClient(base, sql, "manager"), true);
export const asAgentPost = (base: string, sql: Sql) => headersOf(acmeClient(base, sql, "agent"), true);

/** A page every signed-in role may see, with no id of anyone's. */
const page = (name: string, path: string, method: "GET" | "POST" = "GET"): ConsoleRoute => ({
  name,
  session: method === "POST" ? asManagerPost : asManager,
  request: { method, path },
  refusals: { noSession: { status: 303 } },
  crossOrg: { none: "takes no id: shows the signed-in user's own" },
});

/** A route anyone may ask (no session is needed): `status` is its answer without one. */
const open = (name: string, method: "GET" | "POST", path: string, status: number, why: string, headers?: Record<string, string>): ConsoleRoute => ({
  name,
  session: asManager,
  request: { method, path, headers },
  refusals: { noSession: { status } },
  crossOrg: { none: why },
});

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A page or form of one lead (C1's inbox, leads and lead pages): another organization's lead is the missing one's 404. */
const ofLead = (name: string, suffix: string, method: "GET" | "POST" = "GET"): ConsoleRoute => ({
  name,
  session: method === "POST" ? asAgentPost : asAgent,
  request: { method, path: `/console/leads/1${suffix}` },
  refusals: { noSession: { status: 303 } },
  crossOrg: { cases: (w) => [{ name: "lead id", other: { method, path: `/console/leads/${w.otherLead}${suffix}` }, missing: { method, path: `/console/leads/${w.missingLead}${suffix}` } }] },
});

/** A form on one conversation (the inbox's actions): another organization's conversation is the missing one's 404. */
const ofConversation = (name: string, action: string, form: Record<string, string>): ConsoleRoute => ({
  name,
  session: asAgentPost,
  request: { method: "POST", path: `/console/inbox/1/${action}` },
  refusals: { noSession: { status: 303 } },
  crossOrg: {
    cases: (w) => [
      {
        name: "conversation id",
        other: { method: "POST", path: `/console/inbox/${w.otherConversation}/${action}`, form, headers: FORM },
        missing: { method: "POST", path: `/console/inbox/${w.missingConversation}/${action}`, form, headers: FORM },
      },
    ],
  },
});

/** A form on one callback (the lead page's cancel, My work's done): another organization's callback is the missing one's 404. */
const ofCallback = (name: string, action: string): ConsoleRoute => ({
  name,
  session: asAgentPost,
  request: { method: "POST", path: `/console/callbacks/1/${action}` },
  refusals: { noSession: { status: 303 } },
  crossOrg: {
    cases: (w) => [
      {
        name: "callback id",
        other: { method: "POST", path: `/console/callbacks/${w.otherCallback}/${action}`, form: {}, headers: FORM },
        missing: { method: "POST", path: `/console/callbacks/${w.missingCallback}/${action}`, form: {}, headers: FORM },
      },
    ],
  },
});

const leadPages: Record<string, ConsoleRoute> = {
  consoleInbox: {
    ...page("GET /console/inbox", "/console/inbox"),
    crossOrg: {
      cases: (w) => [
        { name: "open conversation", other: { method: "GET", path: `/console/inbox?open=${w.otherConversation}` }, missing: { method: "GET", path: `/console/inbox?open=${w.missingConversation}` } },
      ],
    },
  },
  consoleInboxStream: {
    name: "GET /console/inbox/stream",
    session: asAgent,
    request: { method: "GET", path: "/console/inbox/stream?after=999999999999" },
    // Not a refusal: an EventSource would retry one forever. One `signed-out` event and the end,
    // no data (test/console-inbox-stream.test.ts reads it).
    refusals: { noSession: { status: 200 } },
    crossOrg: { none: "takes no id: the viewer's organization's changes only, confined in SQL (test/console-inbox-stream.test.ts)" },
  },
  consoleInboxAssign: ofConversation("POST /console/inbox/{id}/assign", "assign", { to: "me" }),
  consoleInboxSnooze: ofConversation("POST /console/inbox/{id}/snooze", "snooze", { preset: "hour" }),
  consoleInboxClose: ofConversation("POST /console/inbox/{id}/close", "close", {}),
  consoleInboxReopen: ofConversation("POST /console/inbox/{id}/reopen", "reopen", {}),
  consoleInboxSend: ofConversation("POST /console/inbox/{id}/send", "send", { channel: "note", body: "x", operation_id: "console-cross-org" }),
  consoleInboxBulk: {
    name: "POST /console/inbox/bulk",
    session: asAgentPost,
    request: { method: "POST", path: "/console/inbox/bulk" },
    refusals: { noSession: { status: 303 } },
    crossOrg: {
      cases: (w) => [
        {
          name: "ticked conversation",
          other: { method: "POST", path: "/console/inbox/bulk", form: { action: "close", [`c${w.otherConversation}`]: "on" }, headers: FORM },
          missing: { method: "POST", path: "/console/inbox/bulk", form: { action: "close", [`c${w.missingConversation}`]: "on" }, headers: FORM },
        },
      ],
    },
  },
  consoleLeads: {
    ...page("GET /console/leads", "/console/leads"),
    crossOrg: {
      none:
        "its filters (campaign, list, a phone) are echoed into the page, so two requests never read alike; the same filters on " +
        "consoleLeadsCsv, which echoes nothing, are compared here, and the query of both is tested in test/console-leads-queries.test.ts",
    },
  },
  consoleLeadsCsv: {
    name: "GET /console/leads.csv",
    // Exporting is a manager's right unless the organization grants it to agents (not organization 1 here).
    session: asManager,
    withoutPermission: asAgent,
    request: { method: "GET", path: "/console/leads.csv" },
    refusals: { noSession: { status: 303 }, noPermission: { status: 404 } },
    crossOrg: {
      cases: (w) => [
        { name: "list", other: { method: "GET", path: `/console/leads.csv?list=${w.otherList}` }, missing: { method: "GET", path: `/console/leads.csv?list=${w.missingList}` } },
        { name: "phone", other: { method: "GET", path: `/console/leads.csv?q=${w.otherPhone}` }, missing: { method: "GET", path: `/console/leads.csv?q=${w.missingPhone}` } },
        { name: "campaign", other: { method: "GET", path: "/console/leads.csv?campaign=BOLT" }, missing: { method: "GET", path: "/console/leads.csv?campaign=NOSUCH" } },
      ],
    },
  },
  consoleLead: ofLead("GET /console/leads/{id}", ""),
  consoleLeadSend: ofLead("POST /console/leads/{id}/send", "/send", "POST"),
  consoleLeadConsent: ofLead("POST /console/leads/{id}/consent", "/consent", "POST"),
  consoleLeadDial: ofLead("POST /console/leads/{id}/dial", "/dial", "POST"),
  consoleLeadDnc: ofLead("POST /console/leads/{id}/dnc", "/dnc", "POST"),
  consoleLeadEditPage: ofLead("GET /console/leads/{id}/edit", "/edit"),
  consoleLeadEdit: ofLead("POST /console/leads/{id}/edit", "/edit", "POST"),
  consoleLeadCallback: ofLead("POST /console/leads/{id}/callbacks", "/callbacks", "POST"),
  consoleCallbackCancel: ofCallback("POST /console/callbacks/{id}/cancel", "cancel"),
  consoleCallbackDone: ofCallback("POST /console/callbacks/{id}/done", "done"),
  consoleLeadBookPage: {
    ...ofLead("GET /console/leads/{id}/book", "/book"),
    crossOrg: {
      cases: (w) => [
        { name: "lead id", other: { method: "GET", path: `/console/leads/${w.otherLead}/book?calendar=${w.otherCalendar}` }, missing: { method: "GET", path: `/console/leads/${w.missingLead}/book?calendar=${w.otherCalendar}` } },
        { name: "calendar", other: { method: "GET", path: `/console/leads/${w.ownLead}/book?calendar=${w.otherCalendar}` }, missing: { method: "GET", path: `/console/leads/${w.ownLead}/book?calendar=${w.missingCalendar}` } },
      ],
    },
  },
  consoleLeadBook: {
    ...ofLead("POST /console/leads/{id}/book", "/book", "POST"),
    crossOrg: {
      cases: (w) => {
        const form = (calendar: number) => ({ calendar: String(calendar), epoch: String(Math.floor(Date.now() / 1000) + 7 * 86400) });
        return [
          { name: "lead id", other: { method: "POST", path: `/console/leads/${w.otherLead}/book`, form: form(w.otherCalendar), headers: FORM }, missing: { method: "POST", path: `/console/leads/${w.missingLead}/book`, form: form(w.otherCalendar), headers: FORM } },
          { name: "calendar", other: { method: "POST", path: `/console/leads/${w.ownLead}/book`, form: form(w.otherCalendar), headers: FORM }, missing: { method: "POST", path: `/console/leads/${w.ownLead}/book`, form: form(w.missingCalendar), headers: FORM } },
        ];
      },
    },
  },
  consoleMyWork: page("GET /console/my-work", "/console/my-work"),
  consoleNewLeadPage: page("GET /console/new-lead", "/console/new-lead"),
  consoleNewLead: {
    ...page("POST /console/new-lead", "/console/new-lead", "POST"),
    crossOrg: { none: "its only id is the form's list: another organization's list is refused invalid_list like a missing one (test/console-lead-edit.test.ts)" },
  },
  consoleSearch: { ...page("GET /console/search", "/console/search?q=jose"), crossOrg: { none: "takes no id: searches the signed-in user's organization (test/console-search.test.ts: org 2 never sees org 1's text)" } },
  consoleLeadTimelineOlder: ofLead("GET /console/leads/{id}/timeline/older", "/timeline/older?before=1764100000000000.1.1"),
  consoleLeadReply: {
    name: "GET /console/api/leads/{id}/reply",
    session: asAgent,
    request: { method: "GET", path: "/console/api/leads/1/reply?reply=1&channel=sms" },
    refusals: { noSession: { status: 401, error: "unauthenticated" } },
    crossOrg: {
      cases: (w) => [
        {
          name: "lead id",
          other: { method: "GET", path: `/console/api/leads/${w.otherLead}/reply?reply=1&channel=sms` },
          missing: { method: "GET", path: `/console/api/leads/${w.missingLead}/reply?reply=1&channel=sms` },
        },
      ],
    },
  },
  consoleLeadTimeline: {
    name: "GET /console/api/leads/{id}/timeline",
    session: asAgent,
    request: { method: "GET", path: "/console/api/leads/1/timeline" },
    refusals: { noSession: { status: 401, error: "unauthenticated" } },
    crossOrg: {
      cases: (w) => [
        { name: "lead id", other: { method: "GET", path: `/console/api/leads/${w.otherLead}/timeline` }, missing: { method: "GET", path: `/console/api/leads/${w.missingLead}/timeline` } },
      ],
    },
  },
};

export const CONSOLE_ROUTES: Record<string, ConsoleRoute> = {
  consoleHome: open("GET /console", "GET", "/console", 303, "a redirect to the role's home (Today or the inbox)"),
  consoleSignInPage: open("GET /console/login", "GET", "/console/login", 200, "the sign-in page"),
  consoleSignIn: open("POST /console/login", "POST", "/console/login", 401, "signs in by email and password; no id of an organization's", FORM),
  consoleSignOut: open("POST /console/logout", "POST", "/console/logout", 303, "ends the presented session only"),
  consoleInviteLink: open("GET /console/invite/{token}", "GET", "/console/invite/" + "x".repeat(43), 404, "a one-time link's token, not an organization's id"),
  consoleInvitePage: open("GET /console/invite", "GET", "/console/invite", 404, "an opened link's cookie, not an organization's id"),
  consoleInvite: open("POST /console/invite", "POST", "/console/invite", 404, "an opened link's cookie, not an organization's id", FORM),
  consoleInstallerLink: open("GET /console/install/{token}", "GET", "/console/install/" + "x".repeat(43), 404, "the installer's one-time token, not an organization's id"),
  consoleInstallerPage: open("GET /console/install", "GET", "/console/install", 404, "the installer's form: only with a live installer cookie"),
  consoleInstaller: open("POST /console/install", "POST", "/console/install", 404, "creates the first admin with the installer cookie; no id of an organization's", FORM),
  consoleAsset: open("GET /console/assets/{name}", "GET", "/console/assets/console.css", 200, "the console's own files, the same for everyone"),
  consoleAccount: page("GET /console/account", "/console/account"),
  consoleSignOutEverywhere: page("POST /console/account/sign-out-everywhere", "/console/account/sign-out-everywhere", "POST"),
  consoleTwoStepSetup: page("POST /console/account/two-step/setup", "/console/account/two-step/setup", "POST"),
  consoleTwoStepPage: page("GET /console/account/two-step", "/console/account/two-step"),
  consoleTwoStepConfirm: page("POST /console/account/two-step/confirm", "/console/account/two-step/confirm", "POST"),
  consoleTwoStepOff: page("POST /console/account/two-step/off", "/console/account/two-step/off", "POST"),
  ...OPERATIONS_ROUTES,
  ...SETTINGS_ROUTES,
  ...REPORT_ROUTES,
  ...POOL_ROUTES,
  ...leadPages,
};
