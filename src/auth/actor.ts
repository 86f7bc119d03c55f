// Who acts, and within which tenant scope. Services take an Actor, never a request or an API key:
// the send path is also called by automations and workers, which have no key.

/**
 * `anonymous`: someone not (yet) known, such as a sign-in that failed (its audit row); `recipient`:
 * the person a message went to, acting through a link it carried (an email's unsubscribe link).
 */
export type ActorType = "api_key" | "automation" | "booking" | "operator" | "provider" | "recipient" | "worker" | "user" | "anonymous";

export interface Actor {
  /** The tenant scope: an organization, or null for the platform (house), which is not restricted. */
  orgId: number | null;
  type: ActorType;
  /** The acting thing's id in its kind: a key id, an automation id, a booking link's slug, … */
  id: string;
  /** The agent user a key is bound to (CTI), or null. */
  agent: string | null;
  /** The API key acting, when one is (recorded on dials and calls). */
  keyId: number | null;
  /** A console user's client address, salted and hashed (src/http/client.ts): the audit log's "from where". */
  address?: string;
}

export interface KeyGrants {
  id: number;
  orgId: number | null;
  agent: string | null;
}

export const keyActor = (key: KeyGrants): Actor => ({
  orgId: key.orgId,
  type: "api_key",
  id: String(key.id),
  agent: key.agent,
  keyId: key.id,
});

/** The platform acting for one organization (or the house) without a key: workers, automations. */
export const systemActor = (type: Exclude<ActorType, "api_key" | "user">, id: string, orgId: number | null): Actor => ({
  orgId,
  type,
  id,
  agent: null,
  keyId: null,
});
