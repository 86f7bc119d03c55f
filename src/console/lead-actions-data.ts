// What the lead page's callbacks-and-booking card shows (lead-actions-view.ts), read for a lead the
// caller already confined to the viewer's organization; each read confined again in SQL.
import { leadCalendars } from "../booking/on-behalf";
import type { LeadProfile } from "../leads/profile";
import { assignees } from "../workspace/assignees";
import { leadCallbacks } from "../workspace/callbacks";
import { zoneOr } from "../workspace/snooze";
import type { Deps } from "../http/deps";
import type { CallbackFormState, LeadActions } from "./lead-actions-view";
import type { Viewer } from "./route";

export async function leadActionsOf(deps: Deps, viewer: Viewer, lead: LeadProfile, form: CallbackFormState | null): Promise<LeadActions> {
  const actor = viewer.actor;
  const [callbacks, users, conv, calendars] = await Promise.all([
    leadCallbacks(deps.sql, actor, lead.id),
    // The lead's organization's users (an admin acts within the lead's organization; anyone else's is theirs).
    assignees(deps.sql, { ...actor, orgId: lead.org_id }),
    deps.sql<{ assignee: string | null }[]>`select assignee from conversations where lead_id = ${lead.id} and org_id is not distinct from ${lead.org_id}::bigint`,
    leadCalendars(deps.sql, actor, lead.org_id),
  ]);
  const open = callbacks.filter((c) => c.status === "scheduled" || c.status === "due").sort((a, b) => a.due_at.getTime() - b.due_at.getTime());
  const me = users.some((u) => u.id === viewer.user.id) ? viewer.user.id : null;
  return {
    leadId: lead.id,
    zone: zoneOr(lead.timezone),
    callbacks: open,
    users,
    defaultAssignee: conv[0]?.assignee ?? me,
    calendars,
    form,
  };
}

/** The lead page's notices (`?done=`) of these actions. */
export const LEAD_ACTION_NOTICES: Record<string, { text: string; kind: "ok" | "error" }> = {
  callback_scheduled: { text: "Callback scheduled.", kind: "ok" },
  callback_cancelled: { text: "Callback cancelled.", kind: "ok" },
  callback_done: { text: "Callback marked done.", kind: "ok" },
  callback_closed: { text: "That callback was already done or cancelled.", kind: "ok" },
  appointment_booked_link: {
    text: "Appointment booked: it is in the lead's appointments. A message with its reschedule link is ready in the composer: send it to the lead, or leave it.",
    kind: "ok",
  },
  appointment_booked_unreachable: {
    text: "Appointment booked: it is in the lead's appointments. The lead cannot be sent its reschedule link: no phone or email that may be written to.",
    kind: "ok",
  },
};
