// Applies a validated provisioning file in one transaction. Every object is upserted by its
// identifier and fully described by the file: an optional field left out takes its default
// (an absent `billing` removes the org's billing row). Updates are guarded by
// `is distinct from`, so applying the same file again writes nothing, not even updated_at.
import { systemActor, type Actor } from "../auth/actor";
import type { Sql, Tx } from "../db/client";
import { setLeadStatusesIn } from "../leads/statuses";
import { putSavedReply } from "../replies/service";
import { canonicalScopes, insertKey, notifyKeysChanged, putKey } from "../auth/admin";
import { CHOSEN_KEY_MIN_LENGTH, hashKey } from "../auth/keys";
import { inFormOf, openSecret, seal } from "../secrets/seal";
import { checkStoredSecrets } from "../secrets/stored";
import type { ApiKeySpec, ProvisioningFile } from "./model";
import { ProvisioningError, referenceProblems, referencedIds, type KnownRows } from "./validate";

export interface Counts {
  created: number;
  updated: number;
  unchanged: number;
}

export interface GeneratedKey {
  id: number;
  name: string;
  key: string;
}

/** A key the file chose that is shorter than CHOSEN_KEY_MIN_LENGTH: named, never shown. */
export interface ShortKey {
  id: number;
  name: string;
  length: number;
}

export interface ProvisionSummary {
  counts: Record<string, Counts>;
  generatedKeys: GeneratedKey[];
  shortKeys: ShortKey[];
}

// Serializes concurrent provisioning runs; their upserts would otherwise race on the same ids.
const PROVISION_LOCK = 727_002;
// Rows per insert statement: far below the 65535 bind parameters of one statement.
const BATCH = 1000;

type Written = { inserted: boolean }[];

export async function applyProvisioning(
  sql: Sql,
  file: ProvisioningFile,
  opts: { now?: Date; secretKey?: Buffer | null } = {},
): Promise<ProvisionSummary> {
  const now = opts.now ?? new Date();
  const key = opts.secretKey ?? null;
  const summary: ProvisionSummary = { counts: {}, generatedKeys: [], shortKeys: [] };
  // `removed`: rows changed that the file does not list (billing dropped, numbers deactivated).
  const count = (section: string, total: number, written: Written, removed = 0) => {
    const created = written.filter((r) => r.inserted).length;
    const updated = written.length - created;
    summary.counts[section] = { created, updated: updated + removed, unchanged: total - created - updated };
  };

  await sql.begin(async (tx) => {
    await tx`set local statement_timeout = 0`;
    // Unbounded like a migration, also when `serve --demo` provisions on serve's pool (src/db/deadline.ts).
    await tx`set local lock_timeout = 0`;
    await tx`select pg_advisory_xact_lock(${PROVISION_LOCK})`;
    const problems = referenceProblems(file, await loadKnown(tx, file));
    if (problems.length > 0) throw new ProvisioningError(problems);
    // A run without the key (or with another) that seals nothing still must not write values in
    // another form beside sealed ones that serve could then not all open: refused, nothing written.
    if (file.orgs || file.webhooks) await checkStoredSecrets(tx, key);

    if (file.settings) {
      const entries = Object.entries(file.settings).filter(([, v]) => v !== undefined);
      count("settings", entries.length, await upsertSettings(tx, entries, now));
    }
    if (file.orgs) {
      count("orgs", file.orgs.length, await upsertOrgs(tx, file.orgs, now, key));
      await applyAutomationCaps(tx, file.orgs, now);
      await applyLeadStatuses(tx, file.orgs, now);
      const [written, removed] = await applyBilling(tx, file.orgs, now);
      count("org_billing", file.orgs.filter((o) => o.billing).length, written, removed);
    }
    if (file.users) count("users", file.users.length, await upsertUsers(tx, file.users));
    if (file.campaigns) count("campaigns", file.campaigns.length, await upsertCampaigns(tx, file.campaigns));
    if (file.lists) count("lists", file.lists.length, await upsertLists(tx, file.lists));
    if (file.api_keys) {
      const written: Written = [];
      for (const spec of file.api_keys) {
        const result = await applyKey(tx, spec);
        if (result.written) written.push(result.written);
        if (result.generated) summary.generatedKeys.push(result.generated);
        if (result.short) summary.shortKeys.push(result.short);
      }
      count("api_keys", file.api_keys.length, written);
    }
    if (file.users) {
      const crossed = await movedAgentProblems(tx, file.users);
      if (crossed.length > 0) throw new ProvisioningError(crossed);
    }
    if (file.dni_pools) {
      count("dni_pools", file.dni_pools.length, await upsertPools(tx, file.dni_pools, now));
      const removed = await deactivateNumbers(tx, file.dni_pools);
      const numbers = file.dni_pools.flatMap((p) => p.numbers.map((number) => ({ pool_key: p.key, number })));
      count("dni_numbers", numbers.length, await upsertNumbers(tx, numbers), removed);
    }
    if (file.calendars) {
      count("calendars", file.calendars.length, await upsertCalendars(tx, file.calendars, now));
      const links = file.calendars.flatMap((c) => (c.links ?? []).map((l) => ({ slug: l.slug, calendar_id: c.id })));
      count("calendar_links", links.length, await upsertLinks(tx, links, now));
    }
    if (file.webhooks) count("webhooks", file.webhooks.length, await upsertWebhooks(tx, file.webhooks, now, key));
    if (file.automations) count("automations", file.automations.length, await upsertAutomations(tx, file.automations, now));
    if (file.saved_replies) count("saved_replies", file.saved_replies.length, await applySavedReplies(tx, file.saved_replies, now));
  });
  await notifyKeysChanged(sql);
  return summary;
}

async function loadKnown(tx: Tx, file: ProvisioningFile): Promise<KnownRows> {
  const ids = referencedIds(file);
  const orgs = ids.orgs.length ? await tx<{ id: number }[]>`select id from orgs where id in ${tx(ids.orgs)}` : [];
  const campaigns = ids.campaigns.length
    ? await tx<{ id: string }[]>`select id from campaigns where id in ${tx(ids.campaigns)}`
    : [];
  const users = ids.users.length
    ? await tx<{ id: string; org_id: number | null }[]>`select id, org_id from users where id in ${tx(ids.users)}`
    : [];
  const numbers = ids.numbers.length
    ? await tx<{ number: string; pool_key: string }[]>`
        select number, pool_key from dni_numbers
        where active and number in ${tx(ids.numbers)} and pool_key not in ${tx(ids.pools)}`
    : [];
  return {
    orgs: new Set(orgs.map((r) => r.id)),
    campaigns: new Set(campaigns.map((r) => r.id)),
    users: new Map(users.map((r) => [r.id, r.org_id])),
    foreignNumbers: new Map(numbers.map((r) => [r.number, r.pool_key])),
  };
}

async function inBatches<T>(rows: T[], write: (batch: T[]) => Promise<Written>): Promise<Written> {
  const out: Written = [];
  for (let i = 0; i < rows.length; i += BATCH) out.push(...(await write(rows.slice(i, i + BATCH))));
  return out;
}

function upsertSettings(tx: Tx, entries: [string, unknown][], now: Date): Promise<Written> {
  const rows = entries.map(([key, value]) => ({ key, value: tx.json(value as string | number), updated_at: now }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into settings ${tx(batch)}
    on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at
    where settings.value is distinct from excluded.value
    returning (xmax = 0) as inserted`);
}

/**
 * The stored form of a secret the file gives: the stored value when it already holds exactly that
 * in the form the key gives (so that applying the same file again writes nothing, though sealing
 * draws a fresh IV each time), else the value sealed (or as given, without a key).
 */
function storedForm(key: Buffer | null, existing: string | null | undefined, plaintext: string): string {
  if (existing != null && inFormOf(key, existing) && openSecret(key, existing) === plaintext) return existing;
  return seal(key, plaintext);
}

async function upsertOrgs(tx: Tx, orgs: NonNullable<ProvisioningFile["orgs"]>, now: Date, key: Buffer | null): Promise<Written> {
  const ids = orgs.map((o) => o.id);
  const existing = new Map(
    (await tx<{ id: number; token: string | null; smtp: string | null; agents_export: boolean }[]>`
      select id, sms->>'auth_token' as token, email->>'smtp_url' as smtp, agents_export from orgs where id = any(${ids}::bigint[])`).map((r) => [r.id, r]),
  );
  const rows = orgs.map((o) => ({
    id: o.id,
    name: o.name,
    company: o.company ?? "",
    timezone: o.timezone ?? "America/New_York",
    quiet_start: o.quiet_hours?.start ?? null,
    quiet_end: o.quiet_hours?.end ?? null,
    consent: o.consent ?? "implied",
    // Unlike the fields above, left out it keeps its stored value (operations.md §3).
    agents_export: o.agents_export ?? existing.get(o.id)?.agents_export ?? false,
    sms: o.sms ? tx.json({ ...o.sms, auth_token: storedForm(key, existing.get(o.id)?.token, o.sms.auth_token) }) : null,
    email: o.email ? tx.json({ ...o.email, smtp_url: storedForm(key, existing.get(o.id)?.smtp, o.email.smtp_url) }) : null,
    updated_at: now,
  }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into orgs ${tx(batch)}
    on conflict (id) do update set
      name = excluded.name, company = excluded.company, timezone = excluded.timezone,
      quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end, consent = excluded.consent,
      agents_export = excluded.agents_export, sms = excluded.sms, email = excluded.email, updated_at = excluded.updated_at
    where (orgs.name, orgs.company, orgs.timezone, orgs.quiet_start, orgs.quiet_end, orgs.consent, orgs.agents_export, orgs.sms, orgs.email)
      is distinct from
      (excluded.name, excluded.company, excluded.timezone, excluded.quiet_start, excluded.quiet_end,
       excluded.consent, excluded.agents_export, excluded.sms, excluded.email)
    returning (xmax = 0) as inserted`);
}

/**
 * `orgs[].automation_daily_cap` where the file gives it (null: back to the default); an org whose
 * file leaves it out keeps the cap it has. Its own statement, apart from the orgs' upsert.
 */
async function applyAutomationCaps(tx: Tx, orgs: NonNullable<ProvisioningFile["orgs"]>, now: Date): Promise<void> {
  const given = orgs.filter((o) => o.automation_daily_cap !== undefined);
  if (given.length === 0) return;
  await tx`
    update orgs o set automation_daily_cap = nullif(c.cap, -1)::integer, updated_at = ${now}
    from unnest(${given.map((o) => o.id)}::bigint[], ${given.map((o) => o.automation_daily_cap ?? -1)}::int[]) as c(id, cap)
    where o.id = c.id and o.automation_daily_cap is distinct from nullif(c.cap, -1)::integer`;
}

/** Who the audit log names for a provisioning run's changes made through a feature's service. */
export const PROVISIONING_OPERATOR: Actor = systemActor("operator", "provision", null);

/**
 * `orgs[].statuses` through the service the console's settings use (src/leads/statuses.ts: its
 * rules, its audit row with the previous and new lists): given, the list replaces the org's;
 * `null` restores the default; absent, the stored list stays.
 */
async function applyLeadStatuses(tx: Tx, orgs: NonNullable<ProvisioningFile["orgs"]>, now: Date): Promise<void> {
  for (const o of orgs) if (o.statuses !== undefined) await setLeadStatusesIn(tx, PROVISIONING_OPERATOR, o.id, o.statuses, now);
}

/**
 * `saved_replies[]` through the writer the CLI and the console use (src/replies/service.ts), by id:
 * created, or its fields replaced (audited field by field); a name its org already has elsewhere
 * is refused, naming both.
 */
async function applySavedReplies(tx: Tx, replies: NonNullable<ProvisioningFile["saved_replies"]>, now: Date): Promise<Written> {
  const written: Written = [];
  for (const [i, { id, org_id, ...fields }] of replies.entries()) {
    const r = await putSavedReply(tx, PROVISIONING_OPERATOR, id, org_id, fields, now);
    if (!r.ok) throw new ProvisioningError([`saved_replies[${i}].name: org ${org_id} already has a saved reply named ${JSON.stringify(fields.name.trim())}`]);
    if (r.changed) written.push({ inserted: r.created });
  }
  return written;
}

/**
 * Billing rows for orgs that have `billing`; orgs without it lose theirs (sends get blocked).
 * `credits` in the file is the total the operator grants, not the balance: a new row starts with
 * it; on an existing row only a changed grant moves the balance, by the difference (never below
 * zero), with a `grant` ledger entry. Re-applying the same file gives nothing back that sends spent.
 */
async function applyBilling(tx: Tx, orgs: NonNullable<ProvisioningFile["orgs"]>, now: Date): Promise<[Written, number]> {
  const billed = orgs.filter((o) => o.billing);
  const without = orgs.filter((o) => !o.billing).map((o) => o.id);
  const removed = without.length
    ? await tx`delete from org_billing where org_id in ${tx(without)} returning org_id`
    : [];
  const written: Written = [];
  for (let i = 0; i < billed.length; i += BATCH) {
    const batch = billed.slice(i, i + BATCH);
    const ids = batch.map((o) => o.id);
    // Locked first, as a send does, so that the balance read here is the one the update moves.
    const before = new Map(
      (await tx<{ org_id: number; credits: string }[]>`
        select org_id, credits::text from org_billing where org_id = any(${ids}::bigint[]) order by org_id for update`).map((r) => [r.org_id, r.credits]),
    );
    const rows = await tx<{ org_id: number; credits: string; inserted: boolean }[]>`
      insert into org_billing as b (org_id, status, subscription, credits, granted, sms_cost, email_cost, updated_at)
      select org_id, status, subscription, granted, granted, sms_cost, email_cost, ${now}
      from unnest(${ids}::bigint[], ${batch.map((o) => o.billing!.status)}::text[],
                  ${batch.map((o) => o.billing!.subscription)}::text[], ${batch.map((o) => o.billing!.credits ?? 0)}::numeric[],
                  ${batch.map((o) => o.billing!.sms_cost ?? 0)}::numeric[], ${batch.map((o) => o.billing!.email_cost ?? 0)}::numeric[])
           as f(org_id, status, subscription, granted, sms_cost, email_cost)
      on conflict (org_id) do update set
        status = excluded.status, subscription = excluded.subscription,
        credits = greatest(0, b.credits + excluded.granted - b.granted), granted = excluded.granted,
        sms_cost = excluded.sms_cost, email_cost = excluded.email_cost, updated_at = excluded.updated_at
      where (b.status, b.subscription, b.granted, b.sms_cost, b.email_cost)
        is distinct from (excluded.status, excluded.subscription, excluded.granted, excluded.sms_cost, excluded.email_cost)
      returning b.org_id, b.credits::text, (xmax = 0) as inserted`;
    const grants = rows
      .map((r) => ({ org_id: r.org_id, balance: r.credits, before: before.get(r.org_id) ?? "0" }))
      .filter((g) => g.balance !== g.before);
    if (grants.length) {
      await tx`
        insert into credit_ledger (org_id, kind, amount, balance, created_at)
        select org_id, 'grant', balance - before, balance, ${now}
        from unnest(${grants.map((g) => g.org_id)}::bigint[], ${grants.map((g) => g.balance)}::numeric[],
                    ${grants.map((g) => g.before)}::numeric[]) as g(org_id, balance, before)`;
    }
    written.push(...rows.map((r) => ({ inserted: r.inserted })));
  }
  return [written, removed.length];
}

function upsertUsers(tx: Tx, users: NonNullable<ProvisioningFile["users"]>): Promise<Written> {
  // A user without `email` keeps the console access it has (given by `leadline users create`).
  const rows = users.map((u) => ({ id: u.id, org_id: u.org_id, name: u.name ?? "", email: u.email?.toLowerCase() ?? null, role: u.email ? (u.role ?? null) : null }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into users ${tx(batch)}
    on conflict (id) do update set org_id = excluded.org_id, name = excluded.name,
      email = coalesce(excluded.email, users.email), role = case when excluded.email is null then users.role else excluded.role end
    where (users.org_id, users.name) is distinct from (excluded.org_id, excluded.name)
       or (excluded.email is not null and (users.email, users.role) is distinct from (excluded.email, excluded.role))
    returning (xmax = 0) as inserted`);
}

/**
 * A tenant key may be bound only to an agent of its organization or of the house (agentProblem).
 * The file's keys were checked before writing; a user the file moves to another organization
 * must not leave a key of the old one, already in the database, bound to it. Checked after the
 * writes (the transaction then rolls back), so a key the file rebinds or moves along is not blamed.
 * Revoked keys never act again and do not count.
 */
async function movedAgentProblems(tx: Tx, users: NonNullable<ProvisioningFile["users"]>): Promise<string[]> {
  const ids = users.filter((u) => u.org_id !== null).map((u) => u.id);
  if (ids.length === 0) return [];
  const rows = await tx<{ agent: string; agent_org: number; key_id: number; key_org: number }[]>`
    select u.id as agent, u.org_id as agent_org, k.id as key_id, k.org_id as key_org
    from users u join api_keys k on k.agent = u.id
    where u.id in ${tx(ids)} and k.revoked_at is null and k.org_id is not null and k.org_id <> u.org_id
    order by k.id`;
  const index = new Map(users.map((u, i) => [u.id, i]));
  // In the file's order, like every other problem (rows come in key order).
  return rows
    .map((r) => ({ i: index.get(r.agent)!, r }))
    .sort((a, b) => a.i - b.i)
    .map(({ i, r }) => `users[${i}].org_id: user ${JSON.stringify(r.agent)} is the agent of API key ${r.key_id} of org ${r.key_org}, not ${r.agent_org}`);
}

function upsertCampaigns(tx: Tx, campaigns: NonNullable<ProvisioningFile["campaigns"]>): Promise<Written> {
  const rows = campaigns.map((c) => ({ id: c.id, org_id: c.org_id, name: c.name ?? "" }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into campaigns ${tx(batch)}
    on conflict (id) do update set org_id = excluded.org_id, name = excluded.name
    where (campaigns.org_id, campaigns.name) is distinct from (excluded.org_id, excluded.name)
    returning (xmax = 0) as inserted`);
}

function upsertLists(tx: Tx, lists: NonNullable<ProvisioningFile["lists"]>): Promise<Written> {
  const rows = lists.map((l) => ({ id: l.id, campaign_id: l.campaign_id, name: l.name ?? "" }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into lists ${tx(batch)}
    on conflict (id) do update set campaign_id = excluded.campaign_id, name = excluded.name
    where (lists.campaign_id, lists.name) is distinct from (excluded.campaign_id, excluded.name)
    returning (xmax = 0) as inserted`);
}

/**
 * A key given in the file is identified by its hash. A key without one is identified by
 * (name, org_id) among the provisioned keys that are not revoked; only when there is none is a
 * key generated (and reported once). A revoked key is never reactivated: revocation is final.
 */
async function applyKey(
  tx: Tx,
  spec: ApiKeySpec,
): Promise<{ written?: Written[number]; generated?: GeneratedKey; short?: ShortKey }> {
  const grant = {
    name: spec.name,
    org_id: spec.org_id,
    scopes: canonicalScopes(spec.scopes),
    agent: spec.agent ?? null,
  };
  const active = spec.active ?? true;
  if (spec.key !== undefined) {
    const row = await putKey(tx, { ...grant, active, provisioned: true }, spec.key);
    const written = row ? { inserted: row.inserted } : undefined;
    // Short chosen keys keep working (refusing them would lock out running integrations), but every
    // apply names them until they are replaced. Unchanged rows are not returned by putKey.
    if (spec.key.length >= CHOSEN_KEY_MIN_LENGTH) return { written };
    const id = row?.id ?? (await tx<{ id: number }[]>`select id from api_keys where key_hash = ${hashKey(spec.key)}`)[0].id;
    return { written, short: { id, name: spec.name, length: spec.key.length } };
  }
  const [existing] = await tx<{ id: number }[]>`
    select id from api_keys
    where provisioned and revoked_at is null and name = ${grant.name} and org_id is not distinct from ${grant.org_id}
    order by id desc limit 1
    for update`;
  if (existing) {
    const [row] = await tx<Written>`
      update api_keys set scopes = ${tx.array(grant.scopes, 25)}, agent = ${grant.agent}, active = ${active}
      where id = ${existing.id}
        and (scopes, agent, active) is distinct from (${tx.array(grant.scopes, 25)}::text[], ${grant.agent}::text, ${active})
      returning false as inserted`;
    return { written: row };
  }
  const issued = await insertKey(tx, { ...grant, active, provisioned: true });
  return { written: { inserted: true }, generated: { id: issued.id, name: issued.name, key: issued.key } };
}

function upsertPools(tx: Tx, pools: NonNullable<ProvisioningFile["dni_pools"]>, now: Date): Promise<Written> {
  const rows = pools.map((p) => ({
    key: p.key,
    org_id: p.org_id,
    name: p.name ?? "",
    fallback: p.fallback ?? "",
    placeholder: p.placeholder ?? "",
    ttl_seconds: p.ttl_seconds ?? 1800,
    updated_at: now,
  }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into dni_pools ${tx(batch)}
    on conflict (key) do update set
      org_id = excluded.org_id, name = excluded.name, fallback = excluded.fallback,
      placeholder = excluded.placeholder, ttl_seconds = excluded.ttl_seconds, updated_at = excluded.updated_at
    where (dni_pools.org_id, dni_pools.name, dni_pools.fallback, dni_pools.placeholder, dni_pools.ttl_seconds)
      is distinct from
      (excluded.org_id, excluded.name, excluded.fallback, excluded.placeholder, excluded.ttl_seconds)
    returning (xmax = 0) as inserted`);
}

/**
 * Numbers of a file pool that the file no longer lists stop being offered but are kept, since
 * past calls and visits refer to them. This runs for every pool before any number is
 * (re)activated, because a number may move between two pools of the same file and only one
 * active row per number is allowed.
 */
async function deactivateNumbers(tx: Tx, pools: NonNullable<ProvisioningFile["dni_pools"]>): Promise<number> {
  let removed = 0;
  for (const p of pools) {
    const rows = p.numbers.length
      ? await tx`update dni_numbers set active = false
                 where pool_key = ${p.key} and active and number not in ${tx(p.numbers)} returning number`
      : await tx`update dni_numbers set active = false where pool_key = ${p.key} and active returning number`;
    removed += rows.length;
  }
  return removed;
}

function upsertNumbers(tx: Tx, numbers: { pool_key: string; number: string }[]): Promise<Written> {
  return inBatches(numbers, (batch) => tx<Written>`
    insert into dni_numbers ${tx(batch)}
    on conflict (pool_key, number) do update set active = true
    where not dni_numbers.active
    returning (xmax = 0) as inserted`);
}

function upsertCalendars(tx: Tx, calendars: NonNullable<ProvisioningFile["calendars"]>, now: Date): Promise<Written> {
  const rows = calendars.map((c) => ({
    id: c.id,
    org_id: c.org_id,
    name: c.name ?? "",
    timezone: c.timezone,
    slot_minutes: c.slot_minutes ?? 30,
    capacity: c.capacity ?? 1,
    min_notice_minutes: c.min_notice_minutes ?? 0,
    horizon_days: c.horizon_days ?? 14,
    hours: tx.json(c.hours ?? {}),
    updated_at: now,
  }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into calendars ${tx(batch)}
    on conflict (id) do update set
      org_id = excluded.org_id, name = excluded.name, timezone = excluded.timezone,
      slot_minutes = excluded.slot_minutes, capacity = excluded.capacity,
      min_notice_minutes = excluded.min_notice_minutes, horizon_days = excluded.horizon_days,
      hours = excluded.hours, updated_at = excluded.updated_at
    where (calendars.org_id, calendars.name, calendars.timezone, calendars.slot_minutes, calendars.capacity,
           calendars.min_notice_minutes, calendars.horizon_days, calendars.hours)
      is distinct from
      (excluded.org_id, excluded.name, excluded.timezone, excluded.slot_minutes, excluded.capacity,
       excluded.min_notice_minutes, excluded.horizon_days, excluded.hours)
    returning (xmax = 0) as inserted`);
}

/** A slug names one calendar; naming it under another calendar moves it. */
function upsertLinks(tx: Tx, links: { slug: string; calendar_id: number }[], now: Date): Promise<Written> {
  const rows = links.map((l) => ({ ...l, updated_at: now }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into calendar_links ${tx(batch)}
    on conflict (slug) do update set calendar_id = excluded.calendar_id, updated_at = excluded.updated_at
    where calendar_links.calendar_id is distinct from excluded.calendar_id
    returning (xmax = 0) as inserted`);
}

async function upsertWebhooks(tx: Tx, hooks: NonNullable<ProvisioningFile["webhooks"]>, now: Date, key: Buffer | null): Promise<Written> {
  const ids = hooks.map((h) => h.id);
  const existing = new Map(
    (await tx<{ id: number; secret: string }[]>`select id, secret from webhooks where id = any(${ids}::bigint[])`).map((r) => [r.id, r.secret]),
  );
  const rows = hooks.map((h) => ({
    id: h.id,
    org_id: h.org_id,
    url: h.url,
    secret: storedForm(key, existing.get(h.id), h.secret),
    events: tx.array(h.events, 25),
    active: h.active ?? true,
    updated_at: now,
  }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into webhooks ${tx(batch)}
    on conflict (id) do update set
      org_id = excluded.org_id, url = excluded.url, secret = excluded.secret, events = excluded.events,
      active = excluded.active, updated_at = excluded.updated_at
    where (webhooks.org_id, webhooks.url, webhooks.secret, webhooks.events, webhooks.active)
      is distinct from (excluded.org_id, excluded.url, excluded.secret, excluded.events, excluded.active)
    returning (xmax = 0) as inserted`);
}

function upsertAutomations(tx: Tx, autos: NonNullable<ProvisioningFile["automations"]>, now: Date): Promise<Written> {
  const rows = autos.map((a) => ({
    id: a.id,
    org_id: a.org_id,
    trigger: a.trigger,
    channel: a.channel,
    subject: a.subject ?? null,
    body: a.body,
    delay_seconds: a.delay_seconds ?? 0,
    offset_minutes: a.offset_minutes ?? null,
    sources: a.sources ? tx.array(a.sources, 25) : null,
    active: a.active ?? true,
    updated_at: now,
  }));
  return inBatches(rows, (batch) => tx<Written>`
    insert into automations ${tx(batch)}
    on conflict (id) do update set
      org_id = excluded.org_id, trigger = excluded.trigger, channel = excluded.channel,
      subject = excluded.subject, body = excluded.body, delay_seconds = excluded.delay_seconds,
      offset_minutes = excluded.offset_minutes, sources = excluded.sources,
      active = excluded.active, updated_at = excluded.updated_at
    where (automations.org_id, automations.trigger, automations.channel, automations.subject, automations.body,
           automations.delay_seconds, automations.offset_minutes, automations.sources, automations.active)
      is distinct from
      (excluded.org_id, excluded.trigger, excluded.channel, excluded.subject, excluded.body, excluded.delay_seconds,
       excluded.offset_minutes, excluded.sources, excluded.active)
    returning (xmax = 0) as inserted`);
}
