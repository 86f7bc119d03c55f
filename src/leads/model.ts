// Lead intake input: the contract's field rules, applied to loosely typed JSON or form fields.
import { cut, idField, phone10, textField, truthy } from "../http/text";

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
}

export interface Lead {
  lead_id: number;
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
  address1: string;
  city: string;
  state: string;
  postal_code: string;
  status: string;
  campaign: string;
}

const EMAIL = /^[^\s@<>(),;:"\\[\]]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/** Lowercased; an invalid address becomes empty and does not fail the request. */
export function normalizeEmail(v: unknown): string {
  const s = (textField(v) ?? "").toLowerCase();
  return s.length <= 254 && EMAIL.test(s) ? s : "";
}

const text = (v: unknown, max: number) => cut(textField(v) ?? "", max);

function consentOf(v: unknown): { sms: boolean; email: boolean } {
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    return { sms: o.sms === true, email: o.email === true };
  }
  const all = v === true || (typeof v === "string" && ["1", "true", "yes"].includes(v.trim().toLowerCase()));
  return { sms: all, email: all };
}

/** Null when the phone has fewer than 10 digits (the caller answers bad_phone). */
export function parseLeadInput(f: Record<string, unknown>): LeadInput | null {
  const phone = phone10(f.phone);
  if (!phone) return null;
  return {
    phone,
    listId: idField(f.list_id),
    firstName: text(f.first_name, 60),
    lastName: text(f.last_name, 60),
    email: normalizeEmail(f.email),
    address1: text(f.address1, 120),
    city: text(f.city, 60),
    state: cut((textField(f.state) ?? "").toUpperCase(), 20),
    postalCode: text(f.postal_code, 20),
    source: text(f.source, 50),
    hopper: truthy(f.hopper),
    consent: consentOf(f.consent),
  };
}
