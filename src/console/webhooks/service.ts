// The CLI's webhook operator commands (src/events/admin.ts, deliver.ts) for a console viewer:
// confined to the viewer's organization's endpoints in SQL, each change audited in its transaction.
import type { Actor } from "../../auth/actor";
import type { Tx } from "../../db/client";
import { enableEndpoint } from "../../events/admin";
import { deliveryOptions, replayDelivery, ReplayRefused, type DeliveryOptions, type Replayed } from "../../events/deliver";
import type { Deps } from "../../http/deps";
import { audit } from "../audit";

export type ReplayAnswer = { ok: true; replayed: Replayed } | { ok: false; reason: "not_found" | "closed"; message: string };

/**
 * Sends delivery `deliveryId` of endpoint `endpoint` again now (src/events/deliver.ts
 * replayDelivery); the attempt and the audit row are written in one transaction.
 */
export async function replay(
  deps: Deps,
  actor: Actor,
  endpoint: number,
  deliveryId: number,
  overrides: Partial<DeliveryOptions> = {},
): Promise<ReplayAnswer> {
  const opts = deliveryOptions(deps.config.webhookAllowPrivate, { secretKey: deps.config.secretKey, ...overrides });
  // In the endpoint's organization's log, also when an admin acts.
  const record = async (tx: Tx, r: Replayed) => {
    const [w] = await tx<{ org_id: number | null }[]>`select org_id from webhooks where id = ${endpoint}`;
    await audit(
      tx,
      actor,
      "webhook.replay",
      `delivery:${r.delivery_id}`,
      { endpoint, event_id: r.event_id, attempt_id: r.attempt_id, status: r.outcome.status, error: r.outcome.error },
      w?.org_id ?? null,
    );
  };
  try {
    return { ok: true, replayed: await replayDelivery(deps.sql, deps.clock, deliveryId, opts, { orgId: actor.orgId, endpoint, record }) };
  } catch (err) {
    if (err instanceof ReplayRefused) return { ok: false, reason: err.kind, message: err.message };
    throw err;
  }
}

/** Clears an endpoint's disabled state (after a 410); false when the viewer has no such endpoint. */
export function enable(deps: Deps, actor: Actor, endpoint: number): Promise<boolean> {
  return deps.sql.begin(async (tx) => {
    const found = await enableEndpoint(tx, endpoint, actor.orgId);
    if (found) await audit(tx, actor, "webhook.enable", `webhook:${endpoint}`, {}, found.org_id);
    return found !== null;
  });
}
