// Validation of a provisioning file. Every problem is collected, each named by its path
// (`orgs[0].billing.credit: unknown field`), so an operator fixes a file in one round.
// The schema pass is TypeBox; formats, duplicates and references are checked here by hand.
import type { TSchema } from "@sinclair/typebox";
import { Value, ValueErrorType, type ValueError } from "@sinclair/typebox/value";
import { agentProblem } from "../auth/admin";
import { isSealed } from "../secrets/seal";
import { isZone } from "../zone";
import { isSink } from "../sink";
import { EVENT_TYPES, isSubscription } from "../events/types";
import { dncAddress } from "../leads/dnc";
import { ProvisioningFile, DAYS } from "./model";

// A badly broken file of thousands of rows must not turn into a megabyte-long error line.
const SHOWN = 50;

export class ProvisioningError extends Error {
  constructor(readonly problems: string[]) {
    const more = problems.length > SHOWN ? `; … and ${problems.length - SHOWN} more` : "";
    super(`provisioning file rejected: ${problems.slice(0, SHOWN).join("; ")}${more}`);
  }
}

/** Parses and validates a file's text; throws ProvisioningError listing every problem. */
export function parseProvisioning(text: string): ProvisioningFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ProvisioningError([`not valid JSON: ${err instanceof Error ? err.message : String(err)}`]);
  }
  const problems = fileProblems(value);
  if (problems.length > 0) throw new ProvisioningError(problems);
  return value as ProvisioningFile;
}

export function fileProblems(value: unknown): string[] {
  if (!isRecord(value)) return ["expected a JSON object with sections at the top level"];
  return [...schemaProblems(value), ...formatProblems(value), ...duplicateProblems(value)];
}

// ---- schema ----------------------------------------------------------------------------------

function schemaProblems(root: Record<string, unknown>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  const report = (errors: Iterable<ValueError>, prefix: string) => {
    for (const err of errors) {
      const path = prefix + err.path;
      // A missing field also fails its type check at the same path; report each path once.
      if (seen.has(path)) continue;
      const s = err.schema as { nullable?: boolean; anyOf?: TSchema[] };
      // A field that may be empty (`S` or null) given a value that is not null: the value is
      // reported by S's own rules, at its own depth (`orgs[0].sms.base_url`).
      if (err.type === ValueErrorType.Union && s.nullable && err.value !== null) {
        report(Value.Errors(s.anyOf![0]!, err.value), path);
        continue;
      }
      seen.add(path);
      out.push(`${displayPath(root, path)}: ${describe(err, path)}`);
    }
  };
  report(Value.Errors(ProvisioningFile, root), "");
  return out;
}

function describe(err: ValueError, path: string): string {
  const s = err.schema as Record<string, unknown>;
  // `null` clears a field that may be empty; the others have no empty value to clear to.
  if (err.value === null && !s.nullable) return "cannot be null (it may not be empty)";
  const expected = typeof s.expected === "string" ? `expected ${s.expected}` : null;
  switch (err.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return path.split("/").length === 2 ? "unknown section" : "unknown field";
    case ValueErrorType.ObjectRequiredProperty:
      return "required";
    case ValueErrorType.Integer:
      return "expected integer";
    case ValueErrorType.Number:
      return "expected number";
    case ValueErrorType.String:
      return "expected string";
    case ValueErrorType.Boolean:
      return "expected boolean";
    case ValueErrorType.Object:
      return "expected object";
    case ValueErrorType.Array:
      return "expected array";
    case ValueErrorType.Tuple:
    case ValueErrorType.TupleLength:
    case ValueErrorType.Union:
    case ValueErrorType.StringPattern:
      return expected ?? err.message;
    case ValueErrorType.StringMinLength:
      return s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters`;
    case ValueErrorType.StringMaxLength:
      return `must be at most ${s.maxLength} characters`;
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `must be at least ${s.minimum}`;
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum:
      return `must be at most ${s.maximum}`;
    case ValueErrorType.ArrayMinItems:
      return s.minItems === 1 ? "must not be empty" : `must have at least ${s.minItems} items`;
    case ValueErrorType.ArrayUniqueItems:
      return "has duplicate items";
    default:
      return expected ?? err.message;
  }
}

/** `/orgs/0/billing/credit` → `orgs[0].billing.credit`, using the value to tell indexes from keys. */
export function displayPath(root: unknown, pointer: string): string {
  let out = "";
  let cur: unknown = root;
  for (const raw of pointer.split("/").slice(1)) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(cur)) {
      out += `[${seg}]`;
      cur = cur[Number(seg)];
      continue;
    }
    out += /^[A-Za-z_][A-Za-z0-9_-]*$/.test(seg) ? (out ? "." : "") + seg : `[${JSON.stringify(seg)}]`;
    cur = isRecord(cur) ? cur[seg] : undefined;
  }
  return out || "(file)";
}

// ---- formats ---------------------------------------------------------------------------------
// These read the raw value defensively, so that they can run beside the schema pass and all
// problems are reported together; a value of the wrong type was already reported there.

function formatProblems(root: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (isRecord(root.settings)) checkUrl(out, "settings.BASE_URL", root.settings.BASE_URL, ["http:", "https:"]);
  for (const [i, org] of items(root.orgs)) {
    checkTimezone(out, `orgs[${i}].timezone`, org.timezone);
    const sms = isRecord(org.sms) ? org.sms : {};
    checkUrl(out, `orgs[${i}].sms.base_url`, sms.base_url, ["http:", "https:"], true);
    // The stored form of a sealed value (src/secrets/): read back, it would be taken as sealed.
    if (typeof sms.auth_token === "string" && isSealed(sms.auth_token)) {
      out.push(`orgs[${i}].sms.auth_token: give the token itself, not a sealed value`);
    }
    const email = isRecord(org.email) ? org.email : {};
    checkUrl(out, `orgs[${i}].email.smtp_url`, email.smtp_url, ["smtp:", "smtps:"], true);
  }
  for (const [i, cal] of items(root.calendars)) {
    checkTimezone(out, `calendars[${i}].timezone`, cal.timezone);
    const hours = isRecord(cal.hours) ? cal.hours : {};
    for (const day of DAYS) checkWindows(out, `calendars[${i}].hours.${day}`, hours[day]);
  }
  for (const [i, auto] of items(root.automations)) automationProblems(out, `automations[${i}]`, auto);
  for (const [i, entry] of items(root.do_not_contact)) dncProblems(out, `do_not_contact[${i}]`, entry);
  for (const [i, hook] of items(root.webhooks)) {
    checkUrl(out, `webhooks[${i}].url`, hook.url, ["http:", "https:"], true);
    checkSecret(out, `webhooks[${i}].secret`, hook.secret);
    if (Array.isArray(hook.events)) {
      hook.events.forEach((e, j) => {
        if (typeof e === "string" && e !== "" && !isSubscription(e)) {
          out.push(`webhooks[${i}].events[${j}]: unknown event type ${JSON.stringify(e)}; one of ${EVENT_TYPES.join(", ")} or "*"`);
        }
      });
    }
  }
  for (const [i, feed] of items(root.conversion_feeds)) {
    for (const [j, action] of items(feed.actions)) {
      const path = `conversion_feeds[${i}].actions[${j}]`;
      if (typeof action.name === "string" && /^[=+\-@]/.test(action.name)) {
        out.push(`${path}.name: must not start with =, +, - or @ (the feed writes names as they are, and no cell may start as a formula)`);
      }
      if (typeof action.name === "string" && /[\u0000-\u001f\u007f]/.test(action.name)) out.push(`${path}.name: must not hold control characters or line breaks`);
      if (action.min_secs !== undefined && action.on !== "call") out.push(`${path}.min_secs: only a call action takes min_secs`);
      if (typeof action.currency === "string" && /^[A-Z]{3}$/.test(action.currency) && !CURRENCIES.has(action.currency)) {
        out.push(`${path}.currency: unknown currency ${JSON.stringify(action.currency)}`);
      }
    }
  }
  return out;
}

/** The fields that belong to one trigger: offset_minutes to (and required by) a reminder, sources to new_lead. */
function automationProblems(out: string[], path: string, auto: Record<string, unknown>) {
  const trigger = auto.trigger;
  if (typeof trigger !== "string") return;
  if (trigger === "appointment_reminder" && auto.offset_minutes === undefined) out.push(`${path}.offset_minutes: required for appointment_reminder`);
  if (trigger !== "appointment_reminder" && auto.offset_minutes !== undefined) out.push(`${path}.offset_minutes: only for appointment_reminder`);
  if (trigger !== "new_lead" && auto.sources !== undefined && auto.sources !== null) out.push(`${path}.sources: only for new_lead`);
}

/** One address per entry, in a form the list keeps (src/leads/dnc.ts). */
function dncProblems(out: string[], path: string, entry: Record<string, unknown>) {
  const given = (["phone", "email"] as const).filter((k) => entry[k] !== undefined);
  if (given.length !== 1) {
    out.push(`${path}: give one of phone and email`);
    return;
  }
  const kind = given[0];
  if (typeof entry[kind] === "string" && entry[kind] !== "" && dncAddress(kind, entry[kind]) === null) {
    out.push(`${path}.${kind}: ${kind === "phone" ? "expected a phone number of at least 10 digits" : "expected an email address"}`);
  }
}

// ISO 4217 as the runtime's ICU knows it.
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf("currency"));

function checkTimezone(out: string[], path: string, v: unknown) {
  if (typeof v === "string" && v !== "" && !isZone(v)) out.push(`${path}: unknown time zone ${JSON.stringify(v)}`);
}

/** `sinkable`: a provider address, which may also be `sink:` (src/sink.ts: taken inside the process). */
function checkUrl(out: string[], path: string, v: unknown, protocols: string[], sinkable = false) {
  if (typeof v !== "string" || v === "") return;
  if (sinkable && isSink(v)) return;
  let ok = false;
  try {
    const url = new URL(v);
    ok = protocols.includes(url.protocol) && url.hostname !== "";
  } catch {}
  if (!ok) out.push(`${path}: expected an ${protocols.map((p) => p.slice(0, -1)).join(" or ")} URL${sinkable ? ' or "sink:"' : ""}`);
}

/** Standard Webhooks: `whsec_` then the base64 of the signing key's bytes. */
function checkSecret(out: string[], path: string, v: unknown) {
  if (typeof v !== "string" || v === "") return;
  const b64 = v.startsWith("whsec_") ? v.slice(6) : null;
  const valid = b64 !== null && b64.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(b64);
  if (!valid) out.push(`${path}: expected "whsec_" followed by base64`);
  else if (Buffer.from(b64, "base64").length < 16) out.push(`${path}: key must be at least 16 bytes`);
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const isHHMM = (v: unknown): v is string => typeof v === "string" && /^([01][0-9]|2[0-3]):[0-5][0-9]$/.test(v);

function checkWindows(out: string[], path: string, v: unknown) {
  if (!Array.isArray(v)) return;
  const spans: [number, number, number][] = [];
  v.forEach((w, j) => {
    if (!Array.isArray(w) || w.length !== 2 || !isHHMM(w[0]) || !isHHMM(w[1])) return;
    const [start, end] = [minutes(w[0]), minutes(w[1])];
    if (start >= end) out.push(`${path}[${j}]: start must be before end`);
    else spans.push([start, end, j]);
  });
  spans.sort((a, b) => a[0] - b[0]);
  for (let k = 1; k < spans.length; k++) {
    if (spans[k][0] < spans[k - 1][1]) out.push(`${path}[${spans[k][2]}]: overlaps ${path}[${spans[k - 1][2]}]`);
  }
}

// ---- duplicates ------------------------------------------------------------------------------

const ID_FIELDS = {
  orgs: "id",
  campaigns: "id",
  lists: "id",
  users: "id",
  dni_pools: "key",
  calendars: "id",
  webhooks: "id",
  automations: "id",
  conversion_feeds: "id",
} as const;

function duplicateProblems(root: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [section, field] of Object.entries(ID_FIELDS)) {
    const first = new Map<unknown, number>();
    for (const [i, item] of items(root[section])) {
      const id = item[field];
      if (typeof id !== "string" && typeof id !== "number") continue;
      const j = first.get(id);
      if (j === undefined) first.set(id, i);
      else out.push(`${section}[${i}].${field}: duplicate ${JSON.stringify(id)} (also ${section}[${j}])`);
    }
  }
  const keys = new Map<string, number>();
  const names = new Map<string, number>();
  for (const [i, k] of items(root.api_keys)) {
    if (typeof k.key === "string") {
      const j = keys.get(k.key);
      // Never echo the plaintext of a key in an error.
      if (j === undefined) keys.set(k.key, i);
      else out.push(`api_keys[${i}].key: duplicate key (also api_keys[${j}])`);
    }
    // Keys without plaintext are identified by name and org, so that pair must be unique.
    if (typeof k.name === "string") {
      const id = JSON.stringify([k.name, k.org_id ?? null]);
      const j = names.get(id);
      if (j === undefined) names.set(id, i);
      else out.push(`api_keys[${i}].name: duplicate name ${JSON.stringify(k.name)} in the same org (also api_keys[${j}])`);
    }
  }
  const numbers = new Map<string, string>();
  for (const [i, pool] of items(root.dni_pools)) {
    (Array.isArray(pool.numbers) ? pool.numbers : []).forEach((n, j) => {
      if (typeof n !== "string") return;
      const here = `dni_pools[${i}].numbers[${j}]`;
      const prev = numbers.get(n);
      if (prev === undefined) numbers.set(n, here);
      else out.push(`${here}: duplicate number ${n} (also ${prev})`);
    });
  }
  const slugs = new Map<string, string>();
  for (const [i, cal] of items(root.calendars)) {
    for (const [j, link] of items(cal.links)) {
      if (typeof link.slug !== "string") continue;
      const here = `calendars[${i}].links[${j}].slug`;
      const prev = slugs.get(link.slug);
      if (prev === undefined) slugs.set(link.slug, here);
      else out.push(`${here}: duplicate slug ${JSON.stringify(link.slug)} (also ${prev})`);
    }
  }
  return out;
}

// ---- references ------------------------------------------------------------------------------

/** What the database already holds, for the identifiers the file refers to. */
export interface KnownRows {
  orgs: Set<number>;
  campaigns: Set<string>;
  /** user id → its org (null: house) */
  users: Map<string, number | null>;
  /** active DNI numbers held by pools that the file does not mention: number → pool key */
  foreignNumbers: Map<string, string>;
}

/** The identifiers a valid file refers to, so that only those are looked up. */
export function referencedIds(file: ProvisioningFile) {
  const orgs = new Set<number>();
  const sections = [file.campaigns, file.users, file.api_keys, file.dni_pools, file.calendars, file.webhooks, file.automations];
  for (const s of [...sections, file.do_not_contact, file.conversion_feeds]) {
    for (const item of s ?? []) if (item.org_id !== null) orgs.add(item.org_id);
  }
  const users = new Set<string>();
  for (const k of file.api_keys ?? []) if (k.agent) users.add(k.agent);
  return {
    orgs: [...orgs],
    campaigns: [...new Set((file.lists ?? []).map((l) => l.campaign_id))],
    users: [...users],
    numbers: (file.dni_pools ?? []).flatMap((p) => p.numbers ?? []),
    /** The pools whose active numbers the file gives (the others keep theirs). */
    pools: (file.dni_pools ?? []).filter((p) => p.numbers).map((p) => p.key),
  };
}

/** Every reference of the file that neither the file nor the database satisfies. */
export function referenceProblems(file: ProvisioningFile, known: KnownRows): string[] {
  const out: string[] = [];
  const orgs = new Set([...known.orgs, ...(file.orgs ?? []).map((o) => o.id)]);
  const campaigns = new Set([...known.campaigns, ...(file.campaigns ?? []).map((c) => c.id)]);
  const users = new Map(known.users);
  for (const u of file.users ?? []) users.set(u.id, u.org_id);

  const orgRef = (section: string, items: { org_id: number | null }[] | undefined) =>
    (items ?? []).forEach((item, i) => {
      if (item.org_id !== null && !orgs.has(item.org_id)) out.push(`${section}[${i}].org_id: org ${item.org_id} does not exist`);
    });

  orgRef("campaigns", file.campaigns);
  (file.lists ?? []).forEach((l, i) => {
    if (!campaigns.has(l.campaign_id)) {
      out.push(`lists[${i}].campaign_id: campaign ${JSON.stringify(l.campaign_id)} does not exist`);
    }
  });
  orgRef("users", file.users);
  const emails = new Map<string, number>();
  (file.users ?? []).forEach((u, i) => {
    if (u.email === undefined) return;
    const e = u.email.toLowerCase();
    if (emails.has(e)) out.push(`users[${i}].email: duplicate ${JSON.stringify(e)} (also users[${emails.get(e)}])`);
    else emails.set(e, i);
  });
  orgRef("api_keys", file.api_keys);
  (file.api_keys ?? []).forEach((k, i) => {
    if (!k.agent) return;
    const problem = agentProblem({ org_id: k.org_id, agent: k.agent }, users.get(k.agent));
    if (problem) out.push(`api_keys[${i}].agent: ${problem}`);
  });
  orgRef("dni_pools", file.dni_pools);
  (file.dni_pools ?? []).forEach((p, i) =>
    (p.numbers ?? []).forEach((n, j) => {
      const holder = known.foreignNumbers.get(n);
      if (holder !== undefined) out.push(`dni_pools[${i}].numbers[${j}]: ${n} is active in pool ${JSON.stringify(holder)}`);
    }),
  );
  orgRef("calendars", file.calendars);
  orgRef("webhooks", file.webhooks);
  orgRef("automations", file.automations);
  orgRef("do_not_contact", file.do_not_contact);
  orgRef("conversion_feeds", file.conversion_feeds);
  return out;
}

// ---- helpers ---------------------------------------------------------------------------------

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The object elements of a section with their indexes; anything else yields nothing. */
function items(v: unknown): [number, Record<string, unknown>][] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((x, i) => (isRecord(x) ? [[i, x] as [number, Record<string, unknown>]] : []));
}
