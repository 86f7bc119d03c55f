// The provisioning file (operations.md §3). Every object is closed (additionalProperties: false)
// so that a typo is an error rather than a silently ignored field. `expected` on a schema is the
// wording validate.ts uses when a value does not match it.
import { Type as t, type Static, type TLiteral, type TSchema } from "@sinclair/typebox";
import { SCOPES } from "../auth/keys";
import { LeadStatusList } from "../leads/statuses";
import { SavedReplyFields } from "../replies/service";

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

export const Settings = closed({
  COMMS_INBOUND_LIST_ID: t.Optional(intId),
  BASE_URL: t.Optional(t.String({ minLength: 1 })),
});

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

export const Org = closed({
  id: intId,
  name: t.String({ minLength: 1 }),
  company: t.Optional(t.String()),
  timezone: t.Optional(t.String({ minLength: 1 })),
  quiet_hours: t.Optional(closed({ start: hhmm, end: hhmm })),
  consent: t.Optional(oneOf(["implied", "explicit"] as const)),
  // Agents may export leads and calls as CSV in the console (managers always may); absent: unchanged, false for a new org.
  agents_export: t.Optional(t.Boolean()),
  billing: t.Optional(Billing),
  sms: t.Optional(SmsProvider),
  email: t.Optional(EmailProvider),
  /** Automation sends a day, in the org's time zone; null or absent: the default (1,000). */
  automation_daily_cap: t.Optional(nullable(t.Integer({ minimum: 0, maximum: 10_000_000 }), "integer from 0 to 10000000 or null")),
  /** The lead statuses in order ([{code, label}], NEW among them); null: the default list; absent: unchanged. */
  statuses: t.Optional(nullable(LeadStatusList, "list of {code, label} or null")),
});

export const Campaign = closed({ id: textId, org_id: orgRef, name: t.Optional(t.String()) });

export const List = closed({ id: intId, campaign_id: textId, name: t.Optional(t.String()) });

export const User = closed({
  id: textId,
  org_id: orgRef,
  name: t.Optional(t.String()),
  // A console user (README: Console): signs in with this email; the password is set through `leadline users invite`.
  email: t.Optional(t.String({ minLength: 3, maxLength: 320, pattern: "^[^\\s@]+@[^\\s@]+$" })),
  role: t.Optional(t.Union([t.Literal("admin"), t.Literal("manager"), t.Literal("agent")])),
});

export const ApiKey = closed({
  // Operator-chosen keys still have to resist guessing.
  key: t.Optional(t.String({ minLength: 16, maxLength: 256 })),
  name: t.String({ minLength: 1, maxLength: 200 }),
  org_id: orgRef,
  scopes: t.Array(oneOf(SCOPES), { uniqueItems: true, minItems: 1 }),
  agent: t.Optional(nullable(textId, "user id or null")),
  active: t.Optional(t.Boolean()),
});

export const DniPool = closed({
  key: t.String({ pattern: "^[A-Za-z0-9_-]{1,64}$", expected: "pool key of letters, digits, _ and -, up to 64 characters" }),
  org_id: orgRef,
  name: t.Optional(t.String()),
  numbers: t.Array(phone),
  fallback: t.Optional(phone),
  placeholder: t.Optional(phone),
  ttl_seconds: t.Optional(t.Integer({ minimum: 30, maximum: 30 * 86400 })),
});

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

export const Calendar = closed({
  id: intId,
  org_id: orgRef,
  name: t.Optional(t.String()),
  timezone: t.String({ minLength: 1 }),
  slot_minutes: t.Optional(t.Integer({ minimum: 5, maximum: 1440 })),
  capacity: t.Optional(t.Integer({ minimum: 1, maximum: 10000 })),
  min_notice_minutes: t.Optional(t.Integer({ minimum: 0, maximum: 525600 })),
  horizon_days: t.Optional(t.Integer({ minimum: 1, maximum: 366 })),
  hours: t.Optional(WeeklyHours),
  links: t.Optional(t.Array(closed({ slug: t.String({ pattern: SLUG, expected: "slug of a-z, 0-9 and -, up to 64 characters" }) }))),
});

export const Webhook = closed({
  id: intId,
  org_id: orgRef,
  url: t.String({ minLength: 1 }),
  secret: t.String({ minLength: 1 }),
  events: t.Array(t.String({ minLength: 1 }), { uniqueItems: true }),
  active: t.Optional(t.Boolean()),
});

export const AUTOMATION_TRIGGERS = ["new_lead", "missed_call", "appointment_booked", "appointment_reminder"] as const;

export const Automation = closed({
  id: intId,
  org_id: orgRef,
  trigger: oneOf(AUTOMATION_TRIGGERS),
  channel: oneOf(["sms", "email", "note"] as const),
  subject: t.Optional(nullable(t.String(), "string or null")),
  body: t.String({ minLength: 1 }),
  /** Seconds between the trigger and the send (default 0); at most 30 days. */
  delay_seconds: t.Optional(t.Integer({ minimum: 0, maximum: 2_592_000 })),
  /** appointment_reminder only (and required there): minutes before the start. */
  offset_minutes: t.Optional(t.Integer({ minimum: 5, maximum: 10_080 })),
  /** new_lead only: the lead sources it applies to; absent or null: every source but `booking`. */
  sources: t.Optional(nullable(t.Array(t.String({ minLength: 1, maxLength: 50 }), { uniqueItems: true, minItems: 1 }), "list of lead sources or null")),
  active: t.Optional(t.Boolean()),
});

/** A saved reply (src/replies/service.ts): its fields as the console and the CLI give them, with its id and org. */
export const SavedReply = closed({ id: intId, org_id: intId, ...SavedReplyFields.properties });

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
  saved_replies: t.Optional(t.Array(SavedReply)),
});

export type ProvisioningFile = Static<typeof ProvisioningFile>;
export type OrgSpec = Static<typeof Org>;
export type ApiKeySpec = Static<typeof ApiKey>;
export type DniPoolSpec = Static<typeof DniPool>;
export type CalendarSpec = Static<typeof Calendar>;
export type Section = Exclude<keyof ProvisioningFile, "settings">;
export const SECTIONS = Object.keys(ProvisioningFile.properties) as (keyof ProvisioningFile)[];
