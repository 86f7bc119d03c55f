// The cross-organization table's entries (test/cross-org.test.ts) for the console's settings
// (docs/console-settings.md) and reports (docs/reports.md): organization 2's webhook endpoint, automation, calendar and user,
// made once per database when an entry first signs in, are asked about by organization 1's manager
// and must be answered exactly as missing ones are; agents get the 404 page.
import type { Sql } from "../../src/db/client";
import type { ConsoleRoute, CrossOrgCase } from "./auth-matrix";
// console-matrix.ts imports this file: only its hoisted acmeClient is used, and only when asked.
import { acmeClient } from "./console-matrix";
import { makeUser } from "./console";

const MISSING = 999_999_999;
const NOBODY = `nobody-${MISSING}`;
const ids = { endpoint: 9301, automation: 9301, calendar: 9301, reply: 9301, user: "" };
const made = new WeakMap<Sql, Promise<void>>();

/** Organization 2's records, made once per database. */
function boltSettings(sql: Sql): Promise<void> {
  let p = made.get(sql);
  if (!p) {
    p = (async () => {
      await sql`insert into webhooks (id, org_id, url, secret, events)
                values (${ids.endpoint}, 2, 'https://hooks.bolt.example/settings', ${"whsec_" + Buffer.from("0123456789abcdef").toString("base64")}, '{*}')`;
      await sql`insert into automations (id, org_id, trigger, channel, body) values (${ids.automation}, 2, 'new_lead', 'sms', 'Hi {first_name}')`;
      await sql`insert into calendars (id, org_id, name, timezone, hours) values (${ids.calendar}, 2, 'Bolt settings', 'America/Chicago', '{}')`;
      await sql`insert into calendar_links (slug, calendar_id) values ('bolt-settings', ${ids.calendar})`;
      const [lead] = await sql<{ id: number }[]>`insert into leads (list_id, phone) values (201, '5125559301') returning id`;
      await sql`insert into lead_tags (lead_id, org_id, tag, tag_key) values (${lead!.id}, 2, 'Bolt settings', 'bolt settings')`;
      await sql`insert into saved_replies (id, org_id, name, body) values (${ids.reply}, 2, 'Bolt settings', 'Hi {first_name}')`;
      ids.user = (await makeUser(sql, { role: "agent", orgId: 2 })).id;
    })();
    made.set(sql, p);
  }
  return p;
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };
type Session = (base: string, sql: Sql) => Promise<Record<string, string>>;

const as = (role: "manager" | "agent", posting: boolean): Session => async (base, sql) => {
  await boltSettings(sql);
  const c = await acmeClient(base, sql, role);
  const headers: Record<string, string> = { cookie: c.cookie };
  if (posting) headers["x-csrf-token"] = c.csrf;
  return headers;
};

const get = (path: string) => ({ method: "GET" as const, path });
const post = (path: string, form: Record<string, string> = {}) => ({ method: "POST" as const, path, form, headers: FORM });
const one = (name: string, other: CrossOrgCase["other"], missing: CrossOrgCase["missing"]): CrossOrgCase[] => [{ name, other, missing }];

/** A settings page or form: managers and admins; agents get the 404 page. */
const managers = (name: string, request: ConsoleRoute["request"], crossOrg: ConsoleRoute["crossOrg"]): ConsoleRoute => ({
  name,
  session: as("manager", request.method === "POST"),
  withoutPermission: as("agent", request.method === "POST"),
  request,
  refusals: { noSession: { status: 303 }, noPermission: { status: 404 } },
  crossOrg,
});

/** An admin's page or form (a new organization): managers, like agents, get the 404 page. */
const admins = (name: string, request: ConsoleRoute["request"], why: string): ConsoleRoute => ({
  name,
  session: as("manager", request.method === "POST"),
  withoutPermission: as("manager", request.method === "POST"),
  request,
  refusals: { noSession: { status: 303 }, noPermission: { status: 404 } },
  crossOrg: { none: why },
});

/** A page or form of one object by its id: another organization's is the missing one's 404. */
const byId = (name: string, method: "GET" | "POST", path: (id: number | string) => string, id: () => number | string, missing: number | string, form: Record<string, string> = {}) =>
  managers(name, method === "GET" ? get(path(missing)) : post(path(missing), form), {
    cases: () => one("another organization's", method === "GET" ? get(path(id())) : post(path(id()), form), method === "GET" ? get(path(missing)) : post(path(missing), form)),
  });

const asOrg = (path: string) => ({
  cases: () => one("another organization as `org` (an admin's choice; a manager's is their own)", get(`${path}?org=2`), get(`${path}?org=${MISSING}`)),
});

export const SETTINGS_ROUTES: Record<string, ConsoleRoute> = {
  // The manager's reports (docs/reports.md): figures of the viewer's organization; `org` is an admin's choice.
  consoleToday: managers("GET /console/today", get("/console/today"), asOrg("/console/today")),
  consoleTodayCsv: managers("GET /console/today.csv", get("/console/today.csv"), asOrg("/console/today.csv")),
  consoleAttributionReport: managers("GET /console/reports/attribution", get("/console/reports/attribution"), asOrg("/console/reports/attribution")),
  consoleAttributionReportCsv: managers("GET /console/reports/attribution.csv", get("/console/reports/attribution.csv"), asOrg("/console/reports/attribution.csv")),
  consoleKpiLabel: managers("POST /console/kpi/labels", post("/console/kpi/labels", { metric_key: "calls", label: "Calls" }), {
    none: "labels a metric of the viewer's own organization (an `org` is an admin's choice), tested in test/console-kpi-period.test.ts",
  }),
  consoleAccountPassword: {
    name: "POST /console/account/password",
    session: as("agent", true),
    request: post("/console/account/password", { current: "wrong", password: "x", confirm: "y" }),
    refusals: { noSession: { status: 303 } },
    crossOrg: { none: "changes the signed-in user's own password; takes no id" },
  },
  consoleSettingsFirstSteps: managers("GET /console/settings/first-steps", get("/console/settings/first-steps"), { none: "counts the viewer's own organization's objects; takes no id, tested in test/console-settings2.test.ts" }),
  consoleSettings: managers("GET /console/settings", get("/console/settings"), { none: "a redirect to /console/settings/org; takes no id" }),
  consoleSettingsOrg: managers("GET /console/settings/org", get("/console/settings/org"), asOrg("/console/settings/org")),
  consoleSettingsOrgNew: admins("GET /console/settings/orgs/new", get("/console/settings/orgs/new"), "the new-organization form: admins only; takes no id"),
  consoleSettingsOrgCreate: admins("POST /console/settings/orgs/new", post("/console/settings/orgs/new", { id: "3", name: "Manager's own" }), "creates an organization: admins only (a manager's post creates nothing: test/console-settings-new-org.test.ts)"),
  consoleSettingsOrgSave: byId("POST /console/settings/org/{id}", "POST", (id) => `/console/settings/org/${id}`, () => 2, MISSING, { name: "Taken over" }),
  consoleSettingsUsers: managers("GET /console/settings/users", get("/console/settings/users"), asOrg("/console/settings/users")),
  consoleSettingsUserInvite: managers("POST /console/settings/users", post("/console/settings/users", { email: "matrix@example.test", role: "agent" }), {
    none: "invites into the viewer's own organization (an `org` is an admin's choice, ignored for a manager), tested in test/console-settings.test.ts",
  }),
  consoleSettingsUserLink: byId("POST /console/settings/users/{user}/invite", "POST", (u) => `/console/settings/users/${u}/invite`, () => ids.user, NOBODY),
  consoleSettingsUserRole: byId("POST /console/settings/users/{user}/role", "POST", (u) => `/console/settings/users/${u}/role`, () => ids.user, NOBODY, { role: "manager" }),
  consoleSettingsUserDisableConfirm: byId("GET /console/settings/users/{user}/disable", "GET", (u) => `/console/settings/users/${u}/disable`, () => ids.user, NOBODY),
  consoleSettingsUserDisable: byId("POST /console/settings/users/{user}/disable", "POST", (u) => `/console/settings/users/${u}/disable`, () => ids.user, NOBODY, { confirm: "on" }),
  consoleSettingsUserTwoStep: byId("POST /console/settings/users/{user}/two-step", "POST", (u) => `/console/settings/users/${u}/two-step`, () => ids.user, NOBODY),
  consoleSettingsWebhookNew: managers("GET /console/settings/webhooks", get("/console/settings/webhooks"), { none: "the add form; takes no id" }),
  consoleSettingsWebhookAdd: managers("POST /console/settings/webhooks", post("/console/settings/webhooks", { url: "https://hooks.example/x" }), {
    none: "adds to the viewer's own organization (an `org` is an admin's choice), tested in test/console-settings.test.ts",
  }),
  consoleSettingsWebhook: byId("GET /console/settings/webhooks/{id}", "GET", (id) => `/console/settings/webhooks/${id}`, () => ids.endpoint, MISSING),
  consoleSettingsWebhookSave: byId("POST /console/settings/webhooks/{id}", "POST", (id) => `/console/settings/webhooks/${id}`, () => ids.endpoint, MISSING, { url: "https://evil.example/in" }),
  consoleSettingsWebhookTest: byId("POST /console/settings/webhooks/{id}/test", "POST", (id) => `/console/settings/webhooks/${id}/test`, () => ids.endpoint, MISSING),
  consoleSettingsWebhookRotateConfirm: byId("GET /console/settings/webhooks/{id}/rotate", "GET", (id) => `/console/settings/webhooks/${id}/rotate`, () => ids.endpoint, MISSING),
  consoleSettingsWebhookRotate: byId("POST /console/settings/webhooks/{id}/rotate", "POST", (id) => `/console/settings/webhooks/${id}/rotate`, () => ids.endpoint, MISSING, { confirm: "on" }),
  consoleSettingsWebhookDisableConfirm: byId("GET /console/settings/webhooks/{id}/disable", "GET", (id) => `/console/settings/webhooks/${id}/disable`, () => ids.endpoint, MISSING),
  consoleSettingsWebhookDisable: byId("POST /console/settings/webhooks/{id}/disable", "POST", (id) => `/console/settings/webhooks/${id}/disable`, () => ids.endpoint, MISSING, { confirm: "on" }),
  consoleSettingsAutomations: managers("GET /console/settings/automations", get("/console/settings/automations"), { none: "lists the viewer's organization's automations; takes no id" }),
  consoleSettingsAutomationAdd: managers("POST /console/settings/automations", post("/console/settings/automations", { trigger: "new_lead", channel: "sms", body: "x" }), {
    none: "adds to the viewer's own organization (an `org` is an admin's choice), tested in test/console-settings.test.ts",
  }),
  consoleSettingsAutomation: byId("GET /console/settings/automations/{id}", "GET", (id) => `/console/settings/automations/${id}`, () => ids.automation, MISSING),
  consoleSettingsAutomationSave: byId("POST /console/settings/automations/{id}", "POST", (id) => `/console/settings/automations/${id}`, () => ids.automation, MISSING, { trigger: "new_lead", channel: "sms", body: "Taken over" }),
  consoleSettingsCalendars: managers("GET /console/settings/calendars", get("/console/settings/calendars"), { none: "lists the viewer's organization's calendars; takes no id" }),
  consoleSettingsCalendarAdd: managers("POST /console/settings/calendars", post("/console/settings/calendars", { name: "x", timezone: "America/Chicago" }), {
    none: "adds to the viewer's own organization (an `org` is an admin's choice), tested in test/console-settings.test.ts",
  }),
  consoleSettingsCalendar: byId("GET /console/settings/calendars/{id}", "GET", (id) => `/console/settings/calendars/${id}`, () => ids.calendar, MISSING),
  consoleSettingsCalendarSave: byId("POST /console/settings/calendars/{id}", "POST", (id) => `/console/settings/calendars/${id}`, () => ids.calendar, MISSING, { name: "Taken over", timezone: "America/Chicago" }),
  consoleSettingsLinkAdd: byId("POST /console/settings/calendars/{id}/links", "POST", (id) => `/console/settings/calendars/${id}/links`, () => ids.calendar, MISSING, { slug: "taken-over" }),
  consoleSettingsLinkRemoveConfirm: byId("GET /console/settings/calendars/{id}/links/remove", "GET", (id) => `/console/settings/calendars/${id}/links/remove?slug=bolt-settings`, () => ids.calendar, MISSING),
  consoleSettingsLinkRemove: byId("POST /console/settings/calendars/{id}/links/remove", "POST", (id) => `/console/settings/calendars/${id}/links/remove`, () => ids.calendar, MISSING, { slug: "bolt-settings", confirm: "on" }),
  consoleSettingsStatuses: managers("GET /console/settings/statuses", get("/console/settings/statuses"), asOrg("/console/settings/statuses")),
  consoleSettingsOrgStatuses: byId("GET /console/settings/statuses/{id}", "GET", (id) => `/console/settings/statuses/${id}`, () => 2, MISSING),
  consoleSettingsStatusAdd: byId("POST /console/settings/statuses/{id}/add", "POST", (id) => `/console/settings/statuses/${id}/add`, () => 2, MISSING, { code: "TAKEN", label: "Taken over" }),
  consoleSettingsStatusRename: byId("POST /console/settings/statuses/{id}/rename", "POST", (id) => `/console/settings/statuses/${id}/rename`, () => 2, MISSING, { code: "LOST", label: "Taken over" }),
  consoleSettingsStatusRemoveConfirm: byId("GET /console/settings/statuses/{id}/remove", "GET", (id) => `/console/settings/statuses/${id}/remove?code=LOST`, () => 2, MISSING),
  consoleSettingsStatusRemove: byId("POST /console/settings/statuses/{id}/remove", "POST", (id) => `/console/settings/statuses/${id}/remove`, () => 2, MISSING, { code: "LOST", confirm: "on" }),
  consoleSettingsReplies: managers("GET /console/settings/replies", get("/console/settings/replies"), asOrg("/console/settings/replies")),
  consoleSettingsOrgReplies: byId("GET /console/settings/replies/{id}", "GET", (id) => `/console/settings/replies/${id}`, () => 2, MISSING),
  consoleSettingsReplyAdd: byId("POST /console/settings/replies/{id}/add", "POST", (id) => `/console/settings/replies/${id}/add`, () => 2, MISSING, { name: "Taken over", body: "Hi", "channel.sms": "1" }),
  consoleSettingsReplyEdit: byId("GET /console/settings/replies/{id}/edit", "GET", (id) => `/console/settings/replies/${id}/edit?reply=${ids.reply}`, () => 2, MISSING),
  consoleSettingsReplySave: byId("POST /console/settings/replies/{id}/edit", "POST", (id) => `/console/settings/replies/${id}/edit`, () => 2, MISSING, { reply: String(ids.reply), name: "Taken over", body: "Hi", "channel.sms": "1" }),
  consoleSettingsReplyDeleteConfirm: byId("GET /console/settings/replies/{id}/delete", "GET", (id) => `/console/settings/replies/${id}/delete?reply=${ids.reply}`, () => 2, MISSING),
  consoleSettingsReplyDelete: byId("POST /console/settings/replies/{id}/delete", "POST", (id) => `/console/settings/replies/${id}/delete`, () => 2, MISSING, { reply: String(ids.reply), confirm: "on" }),
  consoleSettingsTags: managers("GET /console/settings/tags", get("/console/settings/tags"), asOrg("/console/settings/tags")),
  consoleSettingsOrgTags: byId("GET /console/settings/tags/{id}", "GET", (id) => `/console/settings/tags/${id}`, () => 2, MISSING),
  consoleSettingsTagRename: byId("POST /console/settings/tags/{id}/rename", "POST", (id) => `/console/settings/tags/${id}/rename`, () => 2, MISSING, { tag: "bolt settings", to: "Taken over" }),
  consoleSettingsTagDeleteConfirm: byId("GET /console/settings/tags/{id}/delete", "GET", (id) => `/console/settings/tags/${id}/delete?tag=bolt%20settings`, () => 2, MISSING),
  consoleSettingsTagDelete: byId("POST /console/settings/tags/{id}/delete", "POST", (id) => `/console/settings/tags/${id}/delete`, () => 2, MISSING, { tag: "bolt settings", confirm: "on" }),
};
