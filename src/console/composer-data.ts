// What the composer needs to know about a lead before anyone types (composer.ts): which channels
// cannot be used and why, when a text sent now would go (the quiet-hours gate's own rule), and
// what one text costs the organization. One reading for the lead page and the inbox's pane.
import type { Deps } from "../http/deps";
import { leadConsent } from "../leads/consent";
import { dncStatus } from "../leads/dnc";
import type { LeadProfile } from "../leads/profile";
import { billingOf } from "../messages/ledger";
import { htmlToText } from "../messages/merge";
import { quietHoursEnd, recipientZone } from "../messages/quiet-hours";
import { listSavedReplies, previewSavedReply, type SavedReply } from "../replies/service";
import { AppError } from "../errors";
import { blockedChannels, type ComposerChannel, type ComposerReplies, type ComposerState } from "./composer";
import type { Viewer } from "./route";

export type ComposerFacts = Pick<ComposerState, "blocked" | "quietUntil" | "smsCost"> & { savedReplies: SavedReply[] };

/** Saved replies the picker lists at most (an organization keeps a few dozen). */
export const PICKER_REPLIES = 200;

export async function composerFacts(deps: Deps, viewer: Viewer, lead: LeadProfile): Promise<ComposerFacts> {
  const orgId = lead.org_id;
  const [consent, dnc, billing, quiet, savedReplies] = await Promise.all([
    leadConsent(deps.sql, lead.id),
    dncStatus(deps.sql, viewer.actor, lead.id),
    orgId === null ? Promise.resolve([]) : billingOf(deps.sql, orgId),
    orgId === null
      ? Promise.resolve([])
      : deps.sql<{ quiet_start: string | null; quiet_end: string | null }[]>`select quiet_start, quiet_end from orgs where id = ${orgId}`,
    // A house lead (no organization) has no saved replies: a reply is one organization's.
    orgId === null ? Promise.resolve([]) : listSavedReplies(deps.sql, viewer.actor, orgId, { limit: PICKER_REPLIES }),
  ]);
  const q = quiet[0];
  const zone = recipientZone(lead.state, orgId === null ? "" : lead.timezone);
  // The gate's own rule (gates.ts quietGate): the recipient's zone; a house lead has no quiet hours.
  const until = q?.quiet_start && q.quiet_end ? quietHoursEnd(deps.clock.now(), { start: q.quiet_start, end: q.quiet_end }, zone) : null;
  return {
    blocked: blockedChannels(lead, consent, dnc),
    quietUntil: until === null ? null : { at: until, zone },
    smsCost: billing[0]?.sms_cost ?? null,
    savedReplies,
  };
}

/** The picker's replies for a page: the preview route of this lead, and where each fills the composer without JavaScript. */
export const composerReplies = (facts: ComposerFacts, leadId: number, href: ComposerReplies["href"]): ComposerReplies => ({
  src: `/console/api/leads/${leadId}/reply`,
  list: facts.savedReplies.map((r) => ({ id: r.id, name: r.name, channels: r.channels })),
  href,
});

/**
 * A saved reply as the composer shows it, merged for the lead by the send path's own merge
 * (previewSavedReply): an email's merged HTML as its text (what the agent edits; the send path
 * makes it HTML again). Null when the reply is not for that channel or there is no organization;
 * another organization's reply is not_found.
 */
export async function replyText(deps: Deps, viewer: Viewer, leadId: number, replyId: number, channel: ComposerChannel): Promise<{ channel: ComposerChannel; subject: string; body: string } | null> {
  const p = await previewSavedReply(deps.sql, viewer.actor, replyId, leadId, channel);
  if (!p.ok) return null;
  return { channel, subject: p.channel === "email" ? p.subject : "", body: p.channel === "email" ? htmlToText(p.body) : p.body };
}

/** `?reply=<id>&reply_channel=<channel>` of a page: the composer filled with that reply (the no-JavaScript menu's links). */
export async function replyDraft(deps: Deps, viewer: Viewer, leadId: number, reply: string | undefined, channel: string | undefined) {
  const id = /^\d{1,15}$/.test(reply ?? "") ? Number(reply) : null;
  // No channel named: a text; a channel that is not one: nothing filled.
  const ch = (["sms", "email", "note"] as const).find((c) => c === (channel ?? "sms"));
  if (id === null || ch === undefined) return null;
  try {
    return await replyText(deps, viewer, leadId, id, ch);
  } catch (err) {
    // A reply that is gone or another organization's: the page as it is, without it.
    if (err instanceof AppError && err.code === "not_found") return null;
    throw err;
  }
}

/** A refused send's draft as a page puts it back (LeadDraft in lead.ts). */
interface Draft {
  channel: ComposerChannel;
  subject: string;
  body: string;
  refusal: string;
}

/** What a page gives its composer: the lead's facts, the send's operation id, a refused send's draft put back (or a saved reply picked), its replies. */
export const composerOf = (
  facts: ComposerFacts,
  operationId: string,
  draft: Draft | { channel: ComposerChannel; subject: string; body: string; refusal?: undefined } | null | undefined,
  replies: ComposerReplies | null = null,
) => ({
  blocked: facts.blocked,
  quietUntil: facts.quietUntil,
  smsCost: facts.smsCost,
  operationId,
  draft: draft && { channel: draft.channel, subject: draft.subject, body: draft.body },
  refusal: draft?.refusal ?? null,
  replies,
});
