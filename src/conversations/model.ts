// The Conversation result (api-v1.md): the lead and its merged timeline of three entry kinds.
import { Type as t } from "@sinclair/typebox";

const closed = { additionalProperties: false } as const;

export const MsgEntry = t.Object(
  {
    kind: t.Literal("msg"),
    id: t.Integer(),
    channel: t.String(),
    direction: t.String(),
    actor_type: t.String(),
    actor_id: t.String(),
    subject: t.String(),
    body: t.String({ description: "untrusted text" }),
    status: t.String(),
    error: t.String(),
    meta: t.Union([t.Record(t.String(), t.Unknown()), t.Array(t.Unknown()), t.Null()]),
    epoch: t.Integer(),
  },
  closed,
);

export const CallEntry = t.Object(
  {
    kind: t.Literal("call"),
    status: t.String(),
    secs: t.Integer(),
    agent: t.String(),
    recording_id: t.Union([t.Integer(), t.Null()]),
    ai_summary: t.Union([t.String(), t.Null()]),
    epoch: t.Integer(),
  },
  closed,
);

export const EventEntry = t.Object(
  {
    kind: t.Literal("event"),
    event: t.String(),
    label: t.String(),
    actor: t.String(),
    actor_role: t.String(),
    note: t.String(),
    epoch: t.Integer(),
  },
  closed,
);

export const ConversationResult = t.Object(
  {
    ok: t.Literal(true),
    lead: t.Object({ lead_id: t.Integer(), name: t.String(), phone: t.String(), status: t.String() }, closed),
    entries: t.Array(t.Union([MsgEntry, CallEntry, EventEntry]), { maxItems: 200 }),
  },
  closed,
);
