// The contract's lenient field rules, shared by every input that arrives as loosely typed JSON or
// form fields: they run once, after a model's shape check (model.ts files).

/** Drops what PostgreSQL text cannot hold (NUL) and lone surrogates, and trims. */
export function cleanText(s: string): string {
  return s.toWellFormed().replace(/\u0000/g, "").trim();
}

/** A scalar field as text; objects, arrays and null count as absent. */
export function textField(v: unknown): string | null {
  if (typeof v === "string") return cleanText(v);
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  if (typeof v === "boolean") return String(v);
  return null;
}

/** Cut to at most n characters (code points, so a surrogate pair is never split). */
export function cut(s: string, n: number): string {
  if (s.length <= n) return s;
  return Array.from(s).slice(0, n).join("");
}

/** A text field cut to `max` characters; absent → "". */
export const text = (v: unknown, max: number): string => cut(textField(v) ?? "", max);

const ID_TEXT = /^[0-9]{1,15}$/;

/** An id as a path or a query writes it: 1 to 15 digits and nothing else, else null. */
export const idText = (s: string | null | undefined): number | null => (typeof s === "string" && ID_TEXT.test(s) ? Number(s) : null);

/** A positive integer id from a number or a numeric string (spaces around it allowed), else null. */
export function idField(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" ? (idText(v.trim()) ?? NaN) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** PHP-style truthiness for flags such as `hopper`. */
export function truthy(v: unknown): boolean {
  if (typeof v === "string") {
    const s = v.trim().toLowerCase();
    return s !== "" && s !== "0" && s !== "false" && s !== "no" && s !== "off";
  }
  return Boolean(v);
}

// One way to match each numeric string: the former `\d+\.?\d*` could split a run of digits
// between its two parts in every way, which took 7 s to refuse 64 KiB of digits and a letter.
/** A decimal number as text, spaces around it allowed: one unambiguous pattern (linear on any input). */
export const NUMERIC_PATTERN = "^\\s*[-+]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?\\s*$";
const NUMERIC = new RegExp(NUMERIC_PATTERN);

/** A decimal number as text (spaces around it allowed), for `Number()` to read. */
export const isNumericText = (s: string): boolean => NUMERIC.test(s);

const EMAIL = /^[^\s@<>(),;:"\\[\]]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/** Lowercased; an invalid address becomes empty and does not fail the request. */
export function emailField(v: unknown): string {
  const s = (textField(v) ?? "").toLowerCase();
  return s.length <= 254 && EMAIL.test(s) ? s : "";
}
