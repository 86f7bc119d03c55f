// The provisioning file (operations.md §3). Every object is closed (additionalProperties: false)
// so that a typo is an error rather than a silently ignored field. `expected` on a schema is the
// wording validate.ts uses when a value does not match it.
//
// Each section's fields are one table (fields.ts): what the file may write, the value a created
// object takes without it (REQUIRED: it must be given to create one), whether `null` clears it,
// and how it is stored. To add a field: one entry in its section's table, plus the column's
// migration; the schema, the merge, the dry run, the audit log and the upsert follow from it.
import { Type as t, type Static, type TLiteral, type TOptional, type TSchema } from "@sinclair/typebox";
import { canonicalScopes } from "../auth/admin";
import { SCOPES } from "../auth/keys";
import { CONVERSION_KINDS, FEED_ID_PATTERN, FEED_SECRET_MIN } from "../conversions/model";
import type { Tx } from "../db/client";
import { always, clearable, field, merged, objectSchema, REQUIRED, type Fields } from "./fields";

export const HHMM = "^([01][0-9]|2[0-3]):[0-5][0-9]$";
export const PHONE10 = "^[0-9]{10}$";
export const SLUG = "^[a-z0-9-]{1,64}$";

const closed = <T extends Parameters<typeof t.Object>[0]>(props: T) => t.Object(props, { additionalProperties: false });
const oneOf = <const V extends readonly string[]>(values: V) =>
  t.Union(values.map((v) => t.Literal(v)) as TLiteral<V[number]>[], { expected: `one of ${values.join(", ")}` });
const nullable = <S extends TSchema>(schema: S, expected: string) => t.Union([schema, t.Null()], { expected });

const intId = t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const textId = t.String({ minLength: 1, maxLength: 64 });
/** House (platform) scope is an explicit null: a forgotten org_id must not widen a grant. */
const orgRef = nullable(intId, "integer or null");
const hhmm = t.String({ pattern: HHMM, expected: "HH:MM time" });
const phone = t.String({ pattern: PHONE10, expected: "10-digit phone number" });
const money = t.Number({ minimum: 0 });
const text = t.String();
const json = (column: string) => (v: unknown, tx: Tx) => ({ [column]: v === null ? null : tx.json(v as never) });
const textArray = (column: string) => (v: unknown, tx: Tx) => ({ [column]: tx.array(v as string[], 25) });

export const Billing = closed({
  status: oneOf(["active", "frozen"] as const),
  subscription: oneOf(["active", "none"] as const),
  credits: t.Optional(money),
  sms_cost: t.Optional(money),
  email_cost: t.Optional(money),
});

export const SmsProvider = closed({
  base_url: t.String({ minLength: 1 }),
  account_sid: t.String({ minLength: 1 }),
  auth_token: t.String({ minLength: 1 }),
  from: t.String({ minLength: 1 }),
});

export const EmailProvider = closed({
  smtp_url: t.String({ minLength: 1 }),
  from: t.String({ minLength: 1 }),
});

/** A provisioned section stored in a table of its own, one row per object, keyed by `key`. */
export interface TableSection<F extends Fields = Fields> {
  /** How one object is named in the dry run and the audit log (`org 1`, `org.update`). */
  noun: string;
  table: string;
  /** The identifying field, the same name in the file and in the table. */
  key: string;
  fields: F;
  /** The table has `updated_at`, written with every change. */
  stamped: boolean;
}

export const ORG_FIELDS = {
  name: field(t.String({ minLength: 1 }), REQUIRED),
  company: clearable(text, "", ""),
  timezone: field(t.String({ minLength: 1 }), "America/New_York"),
  quiet_hours: clearable(closed({ start: hhmm, end: hhmm }), null, null, {
    load: (tx) => tx`case when t.quiet_start is null then null else jsonb_build_object('start', t.quiet_start, 'end', t.quiet_end) end`,
    store: (v) => {
      const q = v as { start: string; end: string } | null;
      return { quiet_start: q?.start ?? null, quiet_end: q?.end ?? null };
    },
  }),
  consent: field(oneOf(["implied", "explicit"] as const), "implied"),
  // A row of org_billing, written by applyBilling (credits are a grant, not the balance).
  billing: merged(Billing, {
    column: null,
    defaults: { credits: 0, sms_cost: 0, email_cost: 0 },
    load: (tx) => tx`(select jsonb_build_object('status', b.status, 'subscription', b.subscription, 'credits', b.granted::float8,
                        'sms_cost', b.sms_cost::float8, 'email_cost', b.email_cost::float8)
                      from org_billing b where b.org_id = t.id)`,
  }),
  sms: merged(SmsProvider, { secrets: ["auth_token"], store: json("sms") }),
  email: merged(EmailProvider, { secrets: ["smtp_url"], store: json("email") }),
  // Agents may export leads and calls as CSV in the console (managers always may).
  agents_export: field(t.Boolean(), false),
  /** Automation sends a day, in the org's time zone; null: the default (1,000). */
  automation_daily_cap: clearable(t.Integer({ minimum: 0, maximum: 10_000_000 }), null, null),
} satisfies Fields;

export const CAMPAIGN_FIELDS = {
  org_id: always(orgRef),
  name: clearable(text, "", ""),
} satisfies Fields;

export const LIST_FIELDS = {
  campaign_id: always(textId),
  name: clearable(text, "", ""),
} satisfies Fields;

export const ROLES = ["admin", "manager", "agent"] as const;

export const USER_FIELDS = {
  org_id: always(orgRef),
  name: clearable(text, "", ""),
  // A console user (docs/provisioning.md): signs in with this email; the password is set through
  // the one-time link of `leadline users invite`, never in the file. Stored lowercased.
  email: field(t.String({ minLength: 3, maxLength: 320, pattern: "^[^\\s@]+@[^\\s@]+$", expected: "an email address" }), null, {
    normalize: (v) => (v as string).toLowerCase(),
  }),
  role: field(oneOf(ROLES), null),
} satisfies Fields;

export const API_KEY_FIELDS = {
  // Operator-chosen keys still have to resist guessing. Never stored: it names the key by its hash.
  key: field(t.String({ minLength: 16, maxLength: 256 }), null, { secret: true }),
  name: always(t.String({ minLength: 1, maxLength: 200 })),
  org_id: always(orgRef),
  scopes: field(t.Array(oneOf(SCOPES), { uniqueItems: true, minItems: 1 }), REQUIRED, { normalize: (v) => canonicalScopes(v as string[]) }),
  agent: clearable(textId, null, null),
  active: field(t.Boolean(), true),
} satisfies Fields;

export const POOL_FIELDS = {
  org_id: always(orgRef),
  name: clearable(text, "", ""),
  // Given, the list replaces the pool's active numbers; dropped ones are deactivated, not deleted.
  numbers: field(t.Array(phone), REQUIRED, {
    column: null,
    unordered: true,
    load: (tx) => tx`array(select n.number from dni_numbers n where n.pool_key = t.key and n.active order by n.number)`,
  }),
  fallback: clearable(phone, "", ""),
  placeholder: clearable(phone, "", ""),
  ttl_seconds: field(t.Integer({ minimum: 30, maximum: 30 * 86400 }), 1800),
} satisfies Fields;

const window = t.Tuple([hhmm, hhmm], { expected: '["HH:MM", "HH:MM"]' });
export const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export const WeeklyHours = closed({
  mon: t.Optional(t.Array(window)),
  tue: t.Optional(t.Array(window)),
  wed: t.Optional(t.Array(window)),
  thu: t.Optional(t.Array(window)),
  fri: t.Optional(t.Array(window)),
  sat: t.Optional(t.Array(window)),
  sun: t.Optional(t.Array(window)),
});

export const CALENDAR_FIELDS = {
  org_id: always(orgRef),
  name: clearable(text, "", ""),
  timezone: field(t.String({ minLength: 1 }), REQUIRED),
  slot_minutes: field(t.Integer({ minimum: 5, maximum: 1440 }), 30),
  capacity: field(t.Integer({ minimum: 1, maximum: 10000 }), 1),
  min_notice_minutes: field(t.Integer({ minimum: 0, maximum: 525600 }), 0),
  horizon_days: field(t.Integer({ minimum: 1, maximum: 366 }), 14),
  hours: clearable(WeeklyHours, {}, {}, { store: json("hours") }),
  // Rows of calendar_links: a slug given is added to this calendar (or moved from another); a file
  // never removes one, since a link handed out must keep working.
  links: field(t.Array(closed({ slug: t.String({ pattern: SLUG, expected: "slug of a-z, 0-9 and -, up to 64 characters" }) })), [], {
    column: null,
    unordered: true,
    combine: (stored, given) => {
      const slugs = new Set([...(stored as { slug: string }[]), ...(given as { slug: string }[])].map((l) => l.slug));
      return [...slugs].sort().map((slug) => ({ slug }));
    },
    load: (tx) => tx`coalesce((select jsonb_agg(jsonb_build_object('slug', l.slug) order by l.slug) from calendar_links l where l.calendar_id = t.id), '[]')`,
  }),
} satisfies Fields;

export const WEBHOOK_FIELDS = {
  org_id: always(orgRef),
  url: field(t.String({ minLength: 1 }), REQUIRED),
  secret: field(t.String({ minLength: 1 }), REQUIRED, { secret: true }),
  events: field(t.Array(t.String({ minLength: 1 }), { uniqueItems: true }), REQUIRED, { store: textArray("events") }),
  active: field(t.Boolean(), true),
} satisfies Fields;

export const AUTOMATION_TRIGGERS = ["new_lead", "missed_call", "appointment_booked", "appointment_reminder"] as const;

export const AUTOMATION_FIELDS = {
  org_id: always(orgRef),
  trigger: field(oneOf(AUTOMATION_TRIGGERS), REQUIRED),
  channel: field(oneOf(["sms", "email", "note"] as const), REQUIRED),
  subject: clearable(text, null, null),
  body: field(t.String({ minLength: 1 }), REQUIRED),
  /** Seconds between the trigger and the send (default 0); at most 30 days. */
  delay_seconds: field(t.Integer({ minimum: 0, maximum: 2_592_000 }), 0),
  /** appointment_reminder only (and required there): minutes before the start. */
  offset_minutes: clearable(t.Integer({ minimum: 5, maximum: 10_080 }), null, null),
  /** new_lead only: the lead sources it applies to; null: every source but `booking`. */
  sources: clearable(t.Array(t.String({ minLength: 1, maxLength: 50 }), { uniqueItems: true, minItems: 1 }), null, null, {
    store: (v, tx) => ({ sources: v === null ? null : tx.array(v as string[], 25) }),
  }),
  active: field(t.Boolean(), true),
} satisfies Fields;

/** Stored as rows of `settings`; `null` removes one (the built-in default applies again). */
export const SETTING_FIELDS = {
  COMMS_INBOUND_LIST_ID: clearable(intId, null, null),
  BASE_URL: clearable(t.String({ minLength: 1 }), null, null),
} satisfies Fields;

const table = <F extends Fields>(noun: string, table: string, key: string, fields: F, stamped: boolean): TableSection<F> => ({ noun, table, key, fields, stamped });

export const TABLES = {
  orgs: table("org", "orgs", "id", ORG_FIELDS, true),
  campaigns: table("campaign", "campaigns", "id", CAMPAIGN_FIELDS, false),
  lists: table("list", "lists", "id", LIST_FIELDS, false),
  users: table("user", "users", "id", USER_FIELDS, false),
  dni_pools: table("pool", "dni_pools", "key", POOL_FIELDS, true),
  calendars: table("calendar", "calendars", "id", CALENDAR_FIELDS, true),
  webhooks: table("webhook", "webhooks", "id", WEBHOOK_FIELDS, true),
  automations: table("automation", "automations", "id", AUTOMATION_FIELDS, true),
};
export type TableName = keyof typeof TABLES;

export const Settings = closed(settingProps());
function settingProps() {
  const props: Record<string, TSchema> = {};
  for (const [name, f] of Object.entries(SETTING_FIELDS)) props[name] = t.Optional(f.schema);
  return props as { [P in keyof typeof SETTING_FIELDS]: TOptional<(typeof SETTING_FIELDS)[P]["schema"]> };
}

export const Org = objectSchema("id", intId, ORG_FIELDS);
export const Campaign = objectSchema("id", textId, CAMPAIGN_FIELDS);
export const List = objectSchema("id", intId, LIST_FIELDS);
export const User = objectSchema("id", textId, USER_FIELDS);
export const ApiKey = apiKeySchema();
export const DniPool = objectSchema(
  "key",
  t.String({ pattern: "^[A-Za-z0-9_-]{1,64}$", expected: "pool key of letters, digits, _ and -, up to 64 characters" }),
  POOL_FIELDS,
);
export const Calendar = objectSchema("id", intId, CALENDAR_FIELDS);
export const Webhook = objectSchema("id", intId, WEBHOOK_FIELDS);
export const Automation = objectSchema("id", intId, AUTOMATION_FIELDS);

/** An API key has no identifier of its own in the file: its `key`, else its name and org. */
function apiKeySchema() {
  const { key, ...rest } = API_KEY_FIELDS;
  return objectSchema("key", t.Optional(key.schema), rest);
}

/**
 * An entry of an organization's do-not-contact list (src/leads/dnc.ts): one phone (at least 10
 * digits, kept as its last 10) or one email. Added with source `provision`, audited; an entry the
 * file no longer lists stays listed (nothing absent is deleted: `leadline dnc remove` takes it off).
 */
export const DoNotContact = closed({
  org_id: intId,
  phone: t.Optional(t.String({ minLength: 1, maxLength: 40 })),
  email: t.Optional(t.String({ minLength: 1, maxLength: 320 })),
  note: t.Optional(t.String({ maxLength: 500 })),
});

/** A conversion action of a feed (operations.md §3): its name in Google Ads and what converts. */
export const ConversionAction = closed({
  name: t.String({ minLength: 1, maxLength: 100 }),
  on: oneOf(CONVERSION_KINDS),
  /** Calls only; default 60. */
  min_secs: t.Optional(t.Integer({ minimum: 0, maximum: 86_400 })),
  // Past 10^15 a double holds no cents, and Google Ads would not take it either.
  value: t.Optional(t.Number({ minimum: 0, maximum: 1e15 })),
  currency: t.Optional(t.String({ pattern: "^[A-Z]{3}$", expected: "ISO 4217 currency code such as USD" })),
});

export const ConversionFeed = closed({
  id: t.String({ pattern: FEED_ID_PATTERN, expected: "feed id of letters, digits, _ and -, up to 64 characters" }),
  // A feed is one organization's conversions, in its time zone: never the house's.
  org_id: intId,
  secret: t.String({ minLength: FEED_SECRET_MIN, maxLength: 1024 }),
  actions: t.Array(ConversionAction, { minItems: 1, maxItems: 100 }),
});

export const ProvisioningFile = closed({
  settings: t.Optional(Settings),
  orgs: t.Optional(t.Array(Org)),
  campaigns: t.Optional(t.Array(Campaign)),
  lists: t.Optional(t.Array(List)),
  users: t.Optional(t.Array(User)),
  api_keys: t.Optional(t.Array(ApiKey)),
  dni_pools: t.Optional(t.Array(DniPool)),
  calendars: t.Optional(t.Array(Calendar)),
  webhooks: t.Optional(t.Array(Webhook)),
  automations: t.Optional(t.Array(Automation)),
  do_not_contact: t.Optional(t.Array(DoNotContact)),
  conversion_feeds: t.Optional(t.Array(ConversionFeed)),
});

export type ProvisioningFile = Static<typeof ProvisioningFile>;
export type OrgSpec = Static<typeof Org>;
export type ApiKeySpec = Static<typeof ApiKey>;
export type DniPoolSpec = Static<typeof DniPool>;
export type CalendarSpec = Static<typeof Calendar>;
export type ConversionFeedSpec = Static<typeof ConversionFeed>;
export type Section = Exclude<keyof ProvisioningFile, "settings">;
export const SECTIONS = Object.keys(ProvisioningFile.properties) as (keyof ProvisioningFile)[];
