// Lead intake and get lead: the request and answer shapes (TypeBox), and intake's lenient rules,
// applied once after the shape check.
import { Type as t, type Static } from "@sinclair/typebox";
import { cut, emailField, idField, text, textField, truthy } from "../http/fields";
import type { Fields } from "../http/input";
import { fieldsInput } from "../http/route";
import { poolKeyOf, visitorOf } from "../dni/rules";
import { phone10 } from "./phone";

const scalar = t.Union([t.String(), t.Number()]);

/** Lead creation input (api-v1.md); additional properties are accepted. JSON or form. */
export const LeadIntakeInput = t.Object(
  {
    phone: t.Union([t.String(), t.Number()], { description: "at least 10 digits; the last 10 are stored" }),
    list_id: t.Optional(t.Union([t.Integer(), t.String()], { description: "a list of the key's organization; else the inbound list" })),
    first_name: t.Optional(scalar),
    last_name: t.Optional(scalar),
    email: t.Optional(t.String({ description: "lowercased; an invalid address becomes empty" })),
    address1: t.Optional(scalar),
    city: t.Optional(scalar),
    state: t.Optional(scalar),
    postal_code: t.Optional(scalar),
    source: t.Optional(scalar),
    hopper: t.Optional(t.Union([t.Boolean(), t.String(), t.Number()], { description: "any truthy value" })),
    consent: t.Optional(
      t.Union([t.Boolean(), t.String(), t.Object({ sms: t.Optional(t.Boolean()), email: t.Optional(t.Boolean()) })]),
    ),
    api_key: t.Optional(t.String()),
    dni_visitor: t.Optional(
      t.Union([t.String(), t.Number()], {
        description:
          "the DNI visitor id (the script fills form fields named `leadline_visitor` with it): a visitor of a pool of the lead's " +
          "organization gives the new lead its first touch (`attribution` in events); anything else is ignored",
      }),
    ),
    dni_pool: t.Optional(t.Union([t.String(), t.Number()], { description: "the pool of `dni_visitor`; absent: any pool of the organization" })),
  },
  { additionalProperties: true },
);

export const LeadIntakeResult = t.Object(
  { ok: t.Literal(true), lead_id: t.Integer(), deduped: t.Boolean() },
  { additionalProperties: false },
);

export const Lead = t.Object(
  {
    lead_id: t.Integer(),
    first_name: t.String(),
    last_name: t.String(),
    phone: t.String({ description: "digits only" }),
    email: t.String(),
    address1: t.String(),
    city: t.String(),
    state: t.String(),
    postal_code: t.String(),
    status: t.String({ description: "current dialer status" }),
    campaign: t.String({ description: "campaign id resolved through the lead's list" }),
  },
  { additionalProperties: false },
);
export type Lead = Static<typeof Lead>;

export const GetLeadResult = t.Object({ ok: t.Literal(true), lead: Lead }, { additionalProperties: false });

export interface LeadInput {
  phone: string;
  listId: number | null;
  firstName: string;
  lastName: string;
  email: string;
  address1: string;
  city: string;
  state: string;
  postalCode: string;
  source: string;
  hopper: boolean;
  consent: { sms: boolean; email: boolean };
  /** The DNI visitor behind the lead (intake's `dni_visitor`), and its pool; null when not named. */
  dniVisitor?: string | null;
  dniPool?: string | null;
}

function consentOf(v: unknown): { sms: boolean; email: boolean } {
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    return { sms: o.sms === true, email: o.email === true };
  }
  const all = v === true || (typeof v === "string" && ["1", "true", "yes"].includes(v.trim().toLowerCase()));
  return { sms: all, email: all };
}

/** The lenient rules of lead creation input; null when the phone has fewer than 10 digits (bad_phone). */
function normalizeIntake(f: Fields<typeof LeadIntakeInput>): LeadInput | null {
  const phone = phone10(f.phone);
  if (!phone) return null;
  return {
    phone,
    listId: idField(f.list_id),
    firstName: text(f.first_name, 60),
    lastName: text(f.last_name, 60),
    email: emailField(f.email),
    address1: text(f.address1, 120),
    city: text(f.city, 60),
    state: cut((textField(f.state) ?? "").toUpperCase(), 20),
    postalCode: text(f.postal_code, 20),
    source: text(f.source, 50),
    hopper: truthy(f.hopper),
    consent: consentOf(f.consent),
    // The DNI API's own rules for these identifiers: a value they cannot name is no visitor.
    dniVisitor: visitorOf(f.dni_visitor),
    dniPool: poolKeyOf(f.dni_pool),
  };
}

/** Lead intake's body: checked on the wire, then normalized (null: bad_phone). */
export const leadIntake = fieldsInput(LeadIntakeInput, normalizeIntake);

export const parseLeadInput = (raw: Record<string, unknown>): LeadInput | null => leadIntake.read(raw, 0);
