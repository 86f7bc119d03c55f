// The cross-organization table's entries (test/cross-org.test.ts) for the console's appointments,
// webhooks, keys and audit-log routes. Organization 2's records they are asked about (a calendar
// with an appointment, a webhook endpoint with a failed delivery, an API key, an audit row) are
// made once per database, when an entry first signs in: `cases` then names them.
import { randomBytes } from "node:crypto";
import type { Sql } from "../../src/db/client";
import type { ConsoleRoute, CrossOrgCase } from "./auth-matrix";
// console-matrix.ts imports this file: only its hoisted acmeClient is used, and only when asked.
import { acmeClient } from "./console-matrix";
import { makeKey } from "./factory";

const MISSING = 999_999_999;
const ids = { calendar: 0, appointment: 0, endpoint: 0, delivery: 0, key: 0, user: "" };
const made = new WeakMap<Sql, Promise<void>>();

/** Organization 2's records, made once per database. */
function boltRecords(sql: Sql): Promise<void> {
  let p = made.get(sql);
  if (!p) {
    p = (async () => {
      await sql`insert into calendars (id, org_id, name, timezone, hours) values (9201, 2, 'Bolt visits', 'America/Chicago', '{}')`;
      await sql`insert into calendar_links (slug, calendar_id) values ('bolt-visits', 9201)`;
      const [a] = await sql`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, token_selector, token_hash)
                            values (9201, 'bolt-visits', ${Math.floor(Date.now() / 1000) + 86_400}, 'Bo Bolt', '5126660003', ${randomBytes(32)}, ${randomBytes(32)})
                            returning id`;
      await sql`insert into webhooks (id, org_id, url, secret, events, disabled_at, disabled_reason)
                values (9201, 2, 'https://hooks.bolt.example/in', ${"whsec_" + Buffer.from("0123456789abcdef").toString("base64")}, '{*}', now(), 'HTTP 410 Gone')`;
      const [e] = await sql`insert into outbox_events (org_id, type, payload, dispatched_at) values (2, 'lead.created', '{}', now()) returning id`;
      const [d] = await sql`insert into webhook_deliveries (event_id, webhook_id, status, attempts) values (${e.id}, 9201, 'failed', 1) returning id`;
      const key = await makeKey(sql, { scopes: ["leads:read"], org: 2, name: "bolt key" });
      await sql`insert into audit_log (org_id, actor_type, actor_id, action, target) values (2, 'user', 'agent9', 'key.create', ${`key:${key.id}`})`;
      Object.assign(ids, { calendar: 9201, appointment: a.id, endpoint: 9201, delivery: d.id, key: key.id, user: "agent9" });
    })();
    made.set(sql, p);
  }
  return p;
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };
type Session = (base: string, sql: Sql) => Promise<Record<string, string>>;

/** Organization 1's manager or agent: its cookie, and for a post its CSRF token. */
const as = (role: "manager" | "agent", posting: boolean): Session => async (base, sql) => {
  const c = await acmeClient(base, sql, role);
  const headers: Record<string, string> = { cookie: c.cookie };
  if (posting) headers["x-csrf-token"] = c.csrf;
  return headers;
};
const asManager = as("manager", false);
const asManagerPost = as("manager", true);
const asAgent = as("agent", false);
const asAgentPost = as("agent", true);
/** Signs in after making organization 2's records, so that `cases` can name them. */
const withRecords = (session: Session): Session => async (base, sql) => {
  await boltRecords(sql);
  return session(base, sql);
};

const get = (path: string) => ({ method: "GET" as const, path });
const post = (path: string, form: Record<string, string> = {}) => ({ method: "POST" as const, path, form, headers: FORM });
const one = (name: string, other: CrossOrgCase["other"], missing: CrossOrgCase["missing"]): CrossOrgCase[] => [{ name, other, missing }];

/** A page or post for managers and admins: agents get the 404 page. */
const managers = (name: string, request: ConsoleRoute["request"], crossOrg: ConsoleRoute["crossOrg"]): ConsoleRoute => ({
  name,
  session: withRecords(request.method === "POST" ? asManagerPost : asManager),
  withoutPermission: request.method === "POST" ? asAgentPost : asAgent,
  request,
  refusals: { noSession: { status: 303 }, noPermission: { status: 404 } },
  crossOrg,
});

export const OPERATIONS_ROUTES: Record<string, ConsoleRoute> = {
  consoleAppointments: {
    name: "GET /console/appointments",
    session: withRecords(asAgent),
    request: get("/console/appointments"),
    refusals: { noSession: { status: 303 } },
    crossOrg: { cases: () => one("another organization's calendar as the filter", get(`/console/appointments?calendar=${ids.calendar}&from=`), get(`/console/appointments?calendar=${MISSING}&from=`)) },
  },
  consoleAppointmentStatus: {
    name: "POST /console/appointments/{id}/status",
    session: withRecords(asAgentPost),
    request: post(`/console/appointments/${MISSING}/status`, { action: "confirm" }),
    refusals: { noSession: { status: 303 } },
    crossOrg: {
      cases: () => [
        ...one("cancel", post(`/console/appointments/${ids.appointment}/status`, { action: "cancel" }), post(`/console/appointments/${MISSING}/status`, { action: "cancel" })),
        ...one("confirm", post(`/console/appointments/${ids.appointment}/status`, { action: "confirm" }), post(`/console/appointments/${MISSING}/status`, { action: "confirm" })),
      ],
    },
  },
  consoleWebhooks: managers("GET /console/webhooks", get("/console/webhooks"), { none: "lists the viewer's organization's endpoints; takes no id" }),
  consoleWebhook: managers("GET /console/webhooks/{id}", get(`/console/webhooks/${MISSING}`), {
    cases: () => one("another organization's endpoint and delivery", get(`/console/webhooks/${ids.endpoint}?delivery=${ids.delivery}`), get(`/console/webhooks/${MISSING}?delivery=${MISSING}`)),
  }),
  consoleWebhookEnable: managers("POST /console/webhooks/{id}/enable", post(`/console/webhooks/${MISSING}/enable`), {
    cases: () => one("another organization's disabled endpoint", post(`/console/webhooks/${ids.endpoint}/enable`), post(`/console/webhooks/${MISSING}/enable`)),
  }),
  consoleWebhookReplay: managers("POST /console/webhooks/{id}/replay", post(`/console/webhooks/${MISSING}/replay`, { delivery: String(MISSING) }), {
    cases: () => one("another organization's delivery", post(`/console/webhooks/${ids.endpoint}/replay`, { delivery: String(ids.delivery) }), post(`/console/webhooks/${MISSING}/replay`, { delivery: String(MISSING) })),
  }),
  consoleKeys: managers("GET /console/keys", get("/console/keys"), { none: "lists the viewer's organization's keys; takes no id" }),
  // A manager's key is always its own organization's (a posted org is ignored); its bound agent is
  // one of the organization's own users: another organization's user, or a house user, is refused
  // in the very words of a missing one, and nothing is made.
  consoleKeyCreate: managers("POST /console/keys", post("/console/keys", { name: "matrix" }), {
    cases: () => [
      ...one("another organization's user as the bound agent", post("/console/keys", { name: "matrix", "scope.cti": "1", agent: ids.user }), post("/console/keys", { name: "matrix", "scope.cti": "1", agent: `nobody-${MISSING}` })),
      ...one("a house user as the bound agent", post("/console/keys", { name: "matrix", "scope.cti": "1", agent: "house1" }), post("/console/keys", { name: "matrix", "scope.cti": "1", agent: `nobody-${MISSING}` })),
    ],
  }),
  consoleKeyRotate: managers("POST /console/keys/{id}/rotate", post(`/console/keys/${MISSING}/rotate`), {
    cases: () => one("another organization's key", post(`/console/keys/${ids.key}/rotate`), post(`/console/keys/${MISSING}/rotate`)),
  }),
  consoleKeyRevoke: managers("POST /console/keys/{id}/revoke", post(`/console/keys/${MISSING}/revoke`), {
    cases: () => one("another organization's key", post(`/console/keys/${ids.key}/revoke`), post(`/console/keys/${MISSING}/revoke`)),
  }),
  consoleAudit: managers("GET /console/audit", get("/console/audit"), {
    cases: () => one("another organization's user as the filter", get(`/console/audit?user=${ids.user}&action=key.create`), get(`/console/audit?user=nobody-${MISSING}&action=key.create`)),
  }),
};
