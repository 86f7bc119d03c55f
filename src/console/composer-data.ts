// What the composer needs to know about a lead before anyone types (composer.ts): which channels
// cannot be used and why, when a text sent now would go (the quiet-hours gate's own rule), and
// what one text costs the organization. One reading for the lead page and the inbox's pane.
import type { Deps } from "../http/deps";
import { leadConsent } from "../leads/consent";
import { dncStatus } from "../leads/dnc";
import type { LeadProfile } from "../leads/profile";
import { billingOf } from "../messages/ledger";
import { quietHoursEnd, recipientZone } from "../messages/quiet-hours";
import { blockedChannels, type ComposerChannel, type ComposerState } from "./composer";
import type { Viewer } from "./route";

export type ComposerFacts = Pick<ComposerState, "blocked" | "quietUntil" | "smsCost">;

export async function composerFacts(deps: Deps, viewer: Viewer, lead: LeadProfile): Promise<ComposerFacts> {
  const orgId = lead.org_id;
  const [consent, dnc, billing, quiet] = await Promise.all([
    leadConsent(deps.sql, lead.id),
    dncStatus(deps.sql, viewer.actor, lead.id),
    orgId === null ? Promise.resolve([]) : billingOf(deps.sql, orgId),
    orgId === null
      ? Promise.resolve([])
      : deps.sql<{ quiet_start: string | null; quiet_end: string | null }[]>`select quiet_start, quiet_end from orgs where id = ${orgId}`,
  ]);
  const q = quiet[0];
  const zone = recipientZone(lead.state, orgId === null ? "" : lead.timezone);
  // The gate's own rule (gates.ts quietGate): the recipient's zone; a house lead has no quiet hours.
  const until = q?.quiet_start && q.quiet_end ? quietHoursEnd(deps.clock.now(), { start: q.quiet_start, end: q.quiet_end }, zone) : null;
  return {
    blocked: blockedChannels(lead, consent, dnc),
    quietUntil: until === null ? null : { at: until, zone },
    smsCost: billing[0]?.sms_cost ?? null,
  };
}

/** A refused send's draft as a page puts it back (LeadDraft in lead.ts). */
interface Draft {
  channel: ComposerChannel;
  subject: string;
  body: string;
  refusal: string;
}

/** What a page gives its composer: the lead's facts, the send's operation id, a refused send's draft put back. */
export const composerOf = (facts: ComposerFacts, operationId: string, draft: Draft | null | undefined) => ({
  ...facts,
  operationId,
  draft: draft && { channel: draft.channel, subject: draft.subject, body: draft.body },
  refusal: draft?.refusal ?? null,
});
