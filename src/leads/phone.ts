// The contract's phone rules, in one place: digits only; at least 10 digits; leads store and
// match on the last 10 (which drops a leading US 1).
import { textField } from "../http/fields";

export function digitsOf(v: unknown): string {
  const s = textField(v);
  return s === null ? "" : s.replace(/\D+/g, "");
}

/** The last 10 digits of a phone with at least 10, else null. */
export function phone10(v: unknown): string | null {
  const d = digitsOf(v);
  return d.length >= 10 ? d.slice(-10) : null;
}

/**
 * A number to dial: at least 10 digits, else null. Longer inputs are kept for the dialer (up to an
 * E.164 length plus slack) and matched on their last 10.
 */
export function dialable(v: unknown): string | null {
  const d = digitsOf(v);
  return d.length >= 10 ? d.slice(-20) : null;
}
