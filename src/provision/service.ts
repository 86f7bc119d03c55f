// Applies a validated provisioning file in one transaction (operations.md §3): every object is
// upserted by its identifier and merged with what is stored — a field left out keeps its value,
// a field given replaces it, `null` clears it — so a later run of an older file never undoes a
// change made since. The same functions serve `leadline provision`, its `--dry-run` (the plan,
// printed, nothing written) and any other caller (the console's settings), with one validation
// and one set of rules; every change is audited with its previous and new values.
import { systemActor, type Actor } from "../auth/actor";
import { insertKey, notifyKeysChanged, putKey } from "../auth/admin";
import { auditMany, type AuditEntry } from "../auth/audit";
import { CHOSEN_KEY_MIN_LENGTH } from "../auth/keys";
import type { Sql, Tx } from "../db/client";
import { addToDnc, dncAddress, type DncAddition } from "../leads/dnc";
import { setLeadStatusesIn, type LeadStatus } from "../leads/statuses";
import { putSavedReply, type SavedReplyFields } from "../replies/service";
import { checkStoredSecrets } from "../secrets/stored";
import { DEFAULT_MIN_SECS, feedSecretHash, type FeedAction } from "../conversions/model";
import type { Fields } from "./fields";
import { takenLinkProblems, writeLinks } from "./links";
import { columnsOf, type Row } from "./merge";
import { TABLES, type ProvisioningFile, type TableName } from "./model";
import { planKeys, planSettings, planTable, takenEmails, type PlanContext, type Planned, type PlannedKey } from "./plan";
import { BATCH, upsertRows, type Written } from "./upsert";
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
  /** Every object of the file, with what the run changed (a dry run: would change). */
  plan: Planned[];
  dryRun: boolean;
}

export interface ProvisionOptions {
  now?: Date;
  /** LEADLINE_SECRET_KEY: seals the credentials and webhook secrets written. */
  secretKey?: Buffer | null;
  /** Who the audit log names; default the operator's provisioning run. */
  actor?: Actor;
  /** Check the file and plan the run, write nothing. */
  dryRun?: boolean;
  /**
   * Every object of the file must be new: one that exists refuses the run (ProvisioningError,
   * nothing written). The console creates an object with an id it picked; checked under the
   * run's lock, so two creating the same id never have the second overwrite the first.
   */
  createOnly?: boolean;
  /**
   * Problems of the plan, checked under the run's lock before anything is written (non-empty:
   * refused, nothing written). The console compares what it built its fragment from with the rows
   * the run read, so a list it rewrote whole (a pool's numbers) is never one changed meanwhile.
   */
  expect?: (planned: Planned[]) => string[];
}

/** The problem createOnly reports for an object that exists (the console retries another id). */
export const EXISTS = "exists already";

/** The operator running `leadline provision`: the platform, acting for every organization. */
export const PROVISIONING_OPERATOR: Actor = systemActor("operator", "provision", null);

// Serializes concurrent provisioning runs; their upserts would otherwise race on the same ids.
const PROVISION_LOCK = 727_002;

// The order sections are planned, written and reported in: referenced rows first.
const SECTION_ORDER = ["orgs", "users", "campaigns", "lists", "api_keys", "dni_pools", "calendars", "webhooks", "automations"] as const;

export async function applyProvisioning(sql: Sql, file: ProvisioningFile, opts: ProvisionOptions = {}): Promise<ProvisionSummary> {
  const now = opts.now ?? new Date();
  const dryRun = opts.dryRun ?? false;
  const summary: ProvisionSummary = { counts: {}, generatedKeys: [], shortKeys: [], plan: [], dryRun };

  await sql.begin(async (tx) => {
    await tx`set local statement_timeout = 0`;
    // Unbounded like a migration, also when `serve --demo` provisions on serve's pool (src/db/deadline.ts).
    await tx`set local lock_timeout = 0`;
    await tx`select pg_advisory_xact_lock(${PROVISION_LOCK})`;
    const problems = referenceProblems(file, await loadKnown(tx, file));
    // A run without the key (or with another) that seals nothing still must not write values in
    // another form beside sealed ones that serve could then not all open: refused, nothing written.
    if (file.orgs || file.webhooks) await checkStoredSecrets(tx, opts.secretKey ?? null);

    const ctx: PlanContext = { tx, actor: opts.actor ?? PROVISIONING_OPERATOR, secretKey: opts.secretKey ?? null, lock: !dryRun };
    const planned: Planned[] = [];
    const plannedKeys: PlannedKey[] = [];
    if (file.settings) {
      const plan = await planSettings(ctx, file.settings as Row);
      planned.push(...plan.objects);
      problems.push(...plan.problems);
    }
    for (const name of SECTION_ORDER) {
      const items = file[name] as Row[] | undefined;
      if (!items) continue;
      const plan = name === "api_keys" ? await planKeys(ctx, items) : await planTable(ctx, name, items);
      if (name === "api_keys") plannedKeys.push(...(plan.objects as PlannedKey[]));
      if (name === "users") problems.push(...(await takenEmails(ctx, plan.objects)));
      planned.push(...plan.objects);
      problems.push(...plan.problems);
    }
    // A tenant's run (a manager's console form) never takes another organization's booking link;
    // the platform's (the operator's file, an admin) upserts links by slug, as operations.md §3 says.
    if (ctx.actor.orgId !== null) problems.push(...(await takenLinkProblems(tx, planned.filter((o) => o.section === "calendars"))));
    if (opts.createOnly) for (const o of planned) if (!o.created) problems.push(`${o.path}: ${EXISTS}`);
    if (opts.expect && problems.length === 0) problems.push(...opts.expect(planned));
    if (problems.length > 0) throw new ProvisioningError(problems);
    summary.plan = planned;
    count(summary, planned);
    if (dryRun) {
      // A dry run writes too, in a savepoint it then undoes, so that what it reports is what the
      // run would do: the sections their own services write (do_not_contact, saved_replies,
      // conversion_feeds) are counted by that code, and a problem only writing finds (an agent
      // moved away from its keys, a reply's name taken) refuses the dry run as it would the run.
      // Keys are left out: a generated key is made only by the run that prints it.
      await tx
        .savepoint(async (sp) => {
          await writeRun(sp, ctx.actor, file, planned, [], summary, now);
          throw UNDONE;
        })
        .catch((err) => {
          if (err !== UNDONE) throw err;
        });
      return;
    }
    await writeRun(tx, ctx.actor, file, planned, plannedKeys, summary, now);
  });
  if (!dryRun) await notifyKeysChanged(sql);
  return summary;
}

const UNDONE = new Error("dry run: undone");

/** Writes a planned run: the planned sections, then those written by their own services. */
async function writeRun(
  tx: Tx,
  actor: Actor,
  file: ProvisioningFile,
  planned: Planned[],
  plannedKeys: PlannedKey[],
  summary: ProvisionSummary,
  now: Date,
): Promise<void> {
  const changed = (o: Planned) => o.created || o.changes.length > 0;
  const of = (section: string) => planned.filter((o) => o.section === section && changed(o));
  if (file.settings) await writeSettings(tx, planned.find((o) => o.section === "settings")!, now);
  await writeTable(tx, "orgs", of("orgs"), now);
  await writeLeadStatuses(tx, actor, of("orgs").filter((o) => o.changes.some((c) => c.field === "statuses")), now);
  await writeBilling(tx, of("orgs").filter((o) => o.changes.some((c) => c.field.startsWith("billing."))), now);
  await writeTable(tx, "users", of("users"), now);
  await writeTable(tx, "campaigns", of("campaigns"), now);
  await writeTable(tx, "lists", of("lists"), now);
  for (const k of plannedKeys) await writeKey(tx, k, summary);
  if (file.users) {
    const crossed = await movedAgentProblems(tx, file.users);
    if (crossed.length > 0) throw new ProvisioningError(crossed);
  }
  const pools = of("dni_pools");
  await writeTable(tx, "dni_pools", pools, now);
  await writeNumbers(tx, pools.filter((o) => o.changes.some((c) => c.field === "numbers")));
  const calendars = of("calendars");
  await writeTable(tx, "calendars", calendars, now);
  await writeLinks(tx, calendars.filter((o) => o.changes.some((c) => c.field === "links")), now);
  await writeTable(tx, "webhooks", of("webhooks"), now);
  await writeTable(tx, "automations", of("automations"), now);
  // An organization's statuses are audited by their own service (lead_statuses.update, above),
  // so the org's own row leaves them out rather than record the change twice.
  const audited = planned
    .map((o) => (o.section === "orgs" ? { ...o, changes: o.changes.filter((c) => c.field !== "statuses") } : o))
    .filter(changed);
  await auditMany(tx, actor, audited.map(auditEntry));
  // Additions only (never a removal), each audited by the list's own service (src/leads/dnc.ts).
  if (file.do_not_contact) {
    const added = (await addDoNotContact(tx, file.do_not_contact, now)).length;
    summary.counts.do_not_contact = { created: added, updated: 0, unchanged: file.do_not_contact.length - added };
  }
  if (file.saved_replies) {
    const written = await applySavedReplies(tx, actor, file.saved_replies, now);
    const created = written.filter((w) => w.inserted).length;
    summary.counts.saved_replies = { created, updated: written.length - created, unchanged: file.saved_replies.length - written.length };
  }
  // Written whole by their id; the secret is kept only as its hash, so the audit says "changed".
  if (file.conversion_feeds) {
    const written = await upsertFeeds(tx, file.conversion_feeds, now);
    const created = written.filter((w) => w.inserted);
    summary.counts.conversion_feeds = {
      created: created.length,
      updated: written.length - created.length,
      unchanged: file.conversion_feeds.length - written.length,
    };
    await auditMany(
      tx,
      actor,
      written.map((w) => ({ action: `conversion_feed.${w.inserted ? "create" : "update"}`, target: `conversion_feed:${w.id}`, orgId: w.org_id })),
    );
  }
}

/**
 * `orgs[].statuses` (a field of ORG_FIELDS stored in orgs.lead_statuses) through the service the
 * console's settings use (src/leads/statuses.ts: its rules, its `lead_statuses.update` audit row
 * with the previous and new lists): only for the orgs whose list the plan changes.
 */
async function writeLeadStatuses(tx: Tx, actor: Actor, orgs: Planned[], now: Date): Promise<void> {
  for (const o of orgs) await setLeadStatusesIn(tx, actor, o.key as number, o.row.statuses as LeadStatus[] | null, now);
}

/**
 * `saved_replies[]` (a section like do_not_contact: written by its own service, never planned)
 * through the writer the CLI and the console use (src/replies/service.ts), by id: created, or its
 * given fields replaced (audited field by field); a name its org already has elsewhere is refused,
 * naming both.
 */
async function applySavedReplies(tx: Tx, actor: Actor, replies: NonNullable<ProvisioningFile["saved_replies"]>, now: Date): Promise<Written> {
  const written: Written = [];
  if (replies.length === 0) return written;
  const ids = replies.map((r) => r.id);
  const kept = new Map(
    (await tx<{ id: number; subject: string; channels: SavedReplyFields["channels"] }[]>`
      select id, subject, channels from saved_replies where id in ${tx(ids)}`).map((r) => [r.id, r]),
  );
  for (const [i, { id, org_id, ...given }] of replies.entries()) {
    // Merged as every section is: a field left out keeps its stored value (name and body are required).
    const old = kept.get(id);
    const fields = old ? { subject: old.subject, channels: old.channels, ...given } : given;
    const r = await putSavedReply(tx, actor, id, org_id, fields, now);
    if (!r.ok) throw new ProvisioningError([`saved_replies[${i}].name: org ${org_id} already has a saved reply named ${JSON.stringify(fields.name.trim())}`]);
    if (r.changed) written.push({ inserted: r.created });
  }
  return written;
}

function count(summary: ProvisionSummary, planned: Planned[]): void {
  for (const o of planned) {
    const c = (summary.counts[o.section] ??= { created: 0, updated: 0, unchanged: 0 });
    if (o.created) c.created++;
    else if (o.changes.length > 0) c.updated++;
    else c.unchanged++;
  }
}

/** The audit row of one object's change: every field's previous and new value, a secret's as "changed". */
function auditEntry(o: Planned): AuditEntry {
  const changes: Record<string, unknown> = {};
  for (const c of o.changes) changes[c.field] = c.secret ? "changed" : { from: c.from, to: c.to };
  return { action: `${o.noun}.${o.created ? "create" : "update"}`, target: o.target, details: { changes }, orgId: o.orgId };
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
  // Active numbers held by pools whose numbers the file does not give (a pool it names without
  // `numbers` keeps its own).
  const numbers = ids.numbers.length
    ? await tx<{ number: string; pool_key: string }[]>`
        select number, pool_key from dni_numbers
        where active and number in ${tx(ids.numbers)} ${ids.pools.length ? tx`and pool_key not in ${tx(ids.pools)}` : tx``}`
    : [];
  return {
    orgs: new Set(orgs.map((r) => r.id)),
    campaigns: new Set(campaigns.map((r) => r.id)),
    users: new Map(users.map((r) => [r.id, r.org_id])),
    foreignNumbers: new Map(numbers.map((r) => [r.number, r.pool_key])),
  };
}

/** The objects of a table section that the plan creates or changes, written whole by the one upsert. */
async function writeTable(tx: Tx, name: TableName, objects: Planned[], now: Date): Promise<Written> {
  const spec = TABLES[name];
  const fields = spec.fields as Fields;
  const rows = objects.map((o) => ({ [spec.key]: o.key, ...columnsOf(fields, o.row, tx) }));
  return upsertRows(tx, spec.table, [spec.key], rows, spec.stamped ? { column: "updated_at", at: now } : null);
}

/** Settings given are stored; a setting written `null` is removed (its default applies again). */
async function writeSettings(tx: Tx, settings: Planned, now: Date): Promise<void> {
  const set = settings.changes.filter((c) => c.to !== null).map((c) => ({ key: c.field, value: tx.json(c.to as never) }));
  const removed = settings.changes.filter((c) => c.to === null).map((c) => c.field);
  await upsertRows(tx, "settings", ["key"], set, { column: "updated_at", at: now });
  if (removed.length) await tx`delete from settings where key in ${tx(removed)}`;
}

/**
 * Billing rows of the orgs whose billing the run changes; `billing: null` removes an org's (sends
 * are then refused `billing_not_configured`). `credits` in the file is the total the operator
 * grants, not the balance: a new row starts with it; on an existing row only a changed grant
 * moves the balance, by the difference (never below zero), with a `grant` ledger entry.
 * Re-applying the same file gives nothing back that sends spent.
 */
async function writeBilling(tx: Tx, orgs: Planned[], now: Date): Promise<void> {
  const removed = orgs.filter((o) => o.row.billing === null).map((o) => o.key as number);
  if (removed.length) await tx`delete from org_billing where org_id in ${tx(removed)}`;
  const billed = orgs.filter((o) => o.row.billing !== null);
  for (let i = 0; i < billed.length; i += BATCH) {
    const batch = billed.slice(i, i + BATCH);
    const ids = batch.map((o) => o.key as number);
    const b = batch.map((o) => o.row.billing as { status: string; subscription: string; credits: number; sms_cost: number; email_cost: number });
    // Locked first, as a send does, so that the balance read here is the one the update moves.
    const before = new Map(
      (await tx<{ org_id: number; credits: string }[]>`
        select org_id, credits::text from org_billing where org_id in ${tx(ids)} order by org_id for update`).map((r) => [r.org_id, r.credits]),
    );
    const rows = await tx<{ org_id: number; credits: string }[]>`
      insert into org_billing as b (org_id, status, subscription, credits, granted, sms_cost, email_cost, updated_at)
      select org_id, status, subscription, granted, granted, sms_cost, email_cost, ${now}
      from unnest(${ids}::bigint[], ${b.map((x) => x.status)}::text[], ${b.map((x) => x.subscription)}::text[],
                  ${b.map((x) => x.credits)}::numeric[], ${b.map((x) => x.sms_cost)}::numeric[], ${b.map((x) => x.email_cost)}::numeric[])
           as f(org_id, status, subscription, granted, sms_cost, email_cost)
      on conflict (org_id) do update set
        status = excluded.status, subscription = excluded.subscription,
        credits = greatest(0, b.credits + excluded.granted - b.granted), granted = excluded.granted,
        sms_cost = excluded.sms_cost, email_cost = excluded.email_cost, updated_at = excluded.updated_at
      where (b.status, b.subscription, b.granted, b.sms_cost, b.email_cost)
        is distinct from (excluded.status, excluded.subscription, excluded.granted, excluded.sms_cost, excluded.email_cost)
      returning b.org_id, b.credits::text`;
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
  }
}

/**
 * A key the file chose is written by its hash (its grants, or a new row); one found by name and
 * org has its grants updated; a new one without `key` is generated and printed once. Short chosen
 * keys keep working (refusing them would lock out running integrations), but every run names them
 * until they are replaced.
 */
async function writeKey(tx: Tx, k: PlannedKey, summary: ProvisionSummary): Promise<void> {
  const grant = {
    name: k.row.name as string,
    org_id: k.row.org_id as number | null,
    scopes: k.row.scopes as string[] as Parameters<typeof insertKey>[1]["scopes"],
    agent: k.row.agent as string | null,
  };
  const active = k.row.active as boolean;
  if (k.chosen !== null) {
    const row = await putKey(tx, { ...grant, active, provisioned: true }, k.chosen);
    k.id ??= row?.id ?? null;
    if (k.chosen.length < CHOSEN_KEY_MIN_LENGTH) summary.shortKeys.push({ id: k.id!, name: grant.name, length: k.chosen.length });
  } else if (k.generate) {
    const issued = await insertKey(tx, { ...grant, active, provisioned: true });
    k.id = issued.id;
    summary.generatedKeys.push({ id: issued.id, name: issued.name, key: issued.key });
  } else if (k.changes.length > 0) {
    await tx`update api_keys set scopes = ${tx.array(grant.scopes, 25)}, agent = ${grant.agent}, active = ${active} where id = ${k.id}`;
  }
  k.target = `key:${k.id}`;
  k.key = k.id!;
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

/**
 * The active numbers of the pools whose `numbers` the run changes become exactly the given ones:
 * numbers no longer listed stop being offered but are kept, since past calls and visits refer to
 * them. Every pool's are deactivated before any is (re)activated, because a number may move
 * between two pools of the same file and only one active row per number is allowed.
 */
async function writeNumbers(tx: Tx, pools: Planned[]): Promise<void> {
  for (const p of pools) {
    const numbers = p.row.numbers as string[];
    await tx`update dni_numbers set active = false
             where pool_key = ${p.key as string} and active ${numbers.length ? tx`and number not in ${tx(numbers)}` : tx``}`;
  }
  const rows = pools.flatMap((p) => (p.row.numbers as string[]).map((number) => ({ pool_key: p.key as string, number, active: true })));
  await upsertRows(tx, "dni_numbers", ["pool_key", "number"], rows);
}

/**
 * `do_not_contact[]`: each entry added to its organization's list with source `provision` and
 * audited as the operator (`operator`/`provision`), like the CLI's additions; one already listed is
 * unchanged, whatever its note (the first record stands). Validated: one address each, in a form
 * the list keeps.
 */
async function addDoNotContact(tx: Tx, entries: NonNullable<ProvisioningFile["do_not_contact"]>, now: Date): Promise<Written> {
  const written: Written = [];
  const byOrg = new Map<number, DncAddition[]>();
  for (const e of entries) {
    const kind = e.phone !== undefined ? "phone" : "email";
    const additions = byOrg.get(e.org_id) ?? [];
    additions.push({ kind, address: dncAddress(kind, e.phone ?? e.email)!, note: e.note ?? "" });
    byOrg.set(e.org_id, additions);
  }
  for (const [orgId, additions] of byOrg) {
    const added = await addToDnc(tx, systemActor("operator", "provision", orgId), orgId, additions, "provision", now);
    written.push(...added.map(() => ({ inserted: true })));
  }
  return written;
}

/**
 * Conversion feeds (src/conversions/): the secret kept only as its hash (feedSecretHash), the
 * actions with their defaults written out, so the feed reads them as stored.
 */
async function upsertFeeds(
  tx: Tx,
  feeds: NonNullable<ProvisioningFile["conversion_feeds"]>,
  now: Date,
): Promise<{ inserted: boolean; id: string; org_id: number }[]> {
  const rows = feeds.map((f) => ({
    id: f.id,
    org_id: f.org_id,
    secret_hash: feedSecretHash(f.secret),
    actions: tx.json(
      f.actions.map((a): FeedAction => ({
        name: a.name,
        on: a.on,
        min_secs: a.on === "call" ? (a.min_secs ?? DEFAULT_MIN_SECS) : 0,
        value: a.value ?? 0,
        currency: a.currency ?? "USD",
      })) as never,
    ),
  }));
  const orgOf = new Map(rows.map((r) => [r.id, r.org_id]));
  const written = await upsertRows(tx, "conversion_feeds", ["id"], rows, { column: "updated_at", at: now });
  return written.map((w) => ({ inserted: w.inserted, id: w.id as string, org_id: orgOf.get(w.id as string)! }));
}
