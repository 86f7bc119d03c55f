// Webhook endpoints for a manager (their organization's) or an admin (all, the house's too):
// add, edit (URL, events, active), rotate the secret, send a test event. Writes are provisioning
// fragments (apply.ts); the endpoint is found confined in SQL first. A new secret is generated
// here and shown once; it is stored sealed like a provisioned one and never read back into a page.
import { randomBytes, randomUUID } from "node:crypto";
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import { deliveryOptions } from "../../events/deliver";
import { isSuccess, sendAttempt, type AttemptOutcome } from "../../events/send";
import { SECRET_PREFIX, signedHeaders } from "../../events/sign";
import { EVENT_TYPES } from "../../events/types";
import type { Deps } from "../../http/deps";
import type { ProvisioningFile } from "../../provision/model";
import { openSecret, SecretError } from "../../secrets/seal";
import { isSink } from "../../sink";
import { audit } from "../audit";
import { applySettings, createNext } from "./apply";

export interface Endpoint {
  id: number;
  org_id: number | null;
  url: string;
  events: string[];
  active: boolean;
}

/** One endpoint the actor may manage, or null (missing or another organization's). */
export async function scopedEndpoint(sql: Sql, actor: Actor, id: number): Promise<Endpoint | null> {
  const [e] = await sql<Endpoint[]>`
    select id::float8 as id, org_id::float8 as org_id, url, events, active from webhooks
    where id = ${id} and (${actor.orgId}::bigint is null or org_id = ${actor.orgId}::bigint)`;
  return e ?? null;
}

/** The subscriptions a form offers: every event, or each one. */
export const SUBSCRIPTIONS: readonly string[] = ["*", ...EVENT_TYPES];

/** `event.<type>` checkboxes of a form, in the documented order. */
export const eventsOf = (form: Readonly<Record<string, string | undefined>>): string[] => SUBSCRIPTIONS.filter((e) => form[`event.${e}`] !== undefined);

/** A new signing secret (Standard Webhooks: whsec_ and the base64 of 32 random bytes). */
export const newSecret = () => SECRET_PREFIX + randomBytes(32).toString("base64");

export type WebhookAnswer<T> = { ok: true; value: T } | { ok: false; problems: string[] };

const fragment = (hook: Record<string, unknown>) => ({ webhooks: [hook] }) as unknown as ProvisioningFile;

/** A new endpoint of `orgId` (null: the house's, admins only), with the next free id (createNext). */
export async function addEndpoint(deps: Deps, actor: Actor, orgId: number | null, url: string, events: string[]): Promise<WebhookAnswer<{ id: number; secret: string }>> {
  const secret = newSecret();
  const r = await createNext(deps, actor, "webhooks", { org_id: orgId, url: url.trim(), secret, events, active: true });
  return r.ok ? { ok: true, value: { id: r.id, secret } } : r;
}

/** URL, events and active of an endpoint the caller found with scopedEndpoint. */
export async function editEndpoint(deps: Deps, actor: Actor, e: Endpoint, change: { url?: string; events?: string[]; active?: boolean }): Promise<WebhookAnswer<boolean>> {
  const r = await applySettings(deps, actor, fragment({ id: e.id, org_id: e.org_id, ...change, ...(change.url !== undefined ? { url: change.url.trim() } : {}) }));
  return r.ok ? { ok: true, value: (r.summary.counts.webhooks?.updated ?? 0) > 0 } : { ok: false, problems: r.problems };
}

/** A new secret for the endpoint: the old one stops signing at once. */
export async function rotateSecret(deps: Deps, actor: Actor, e: Endpoint): Promise<WebhookAnswer<string>> {
  const secret = newSecret();
  const r = await applySettings(deps, actor, fragment({ id: e.id, org_id: e.org_id, secret }));
  return r.ok ? { ok: true, value: secret } : { ok: false, problems: r.problems };
}

export const TEST_EVENT = "webhook.test";

/**
 * One signed POST of a `webhook.test` event to the endpoint, now, outside the outbox (it is no
 * business event: nothing is stored, retried or counted as a delivery), through the delivery's own
 * sender (address checks, timeout, response cap). No transaction is open while it waits. Audited
 * as webhook.test with the answer's status.
 */
export async function sendTest(deps: Deps, actor: Actor, e: Endpoint): Promise<AttemptOutcome> {
  const [row] = await deps.sql<{ secret: string }[]>`select secret from webhooks where id = ${e.id}`;
  const now = deps.clock.now();
  const id = `evt_test_${randomUUID()}`;
  const body = JSON.stringify({ type: TEST_EVENT, timestamp: new Date(now).toISOString(), data: { webhook_id: e.id, test: true } });
  let outcome: AttemptOutcome;
  if (isSink(e.url)) outcome = { status: 200, error: null, response: "recorded by the sink inside leadline; nothing was sent", address: null, durationMs: 0 };
  else {
    try {
      const secret = openSecret(deps.config.secretKey, row!.secret, `webhook ${e.id}'s secret`);
      outcome = await sendAttempt(e.url, signedHeaders(secret, id, Math.floor(now / 1000), body), body, deliveryOptions(deps.config.webhookAllowPrivate));
    } catch (err) {
      if (!(err instanceof SecretError)) throw err;
      outcome = { status: null, error: err.message, response: null, address: null, durationMs: 0 };
    }
  }
  await audit(deps.sql, actor, "webhook.test", `webhook:${e.id}`, { event_id: id, status: outcome.status, error: outcome.error, ok: isSuccess(outcome) }, e.org_id);
  return outcome;
}
