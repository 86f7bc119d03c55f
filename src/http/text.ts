// Field coercion shared by every handler that takes loosely typed input (JSON or form).

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

export function digitsOf(v: unknown): string {
  const s = textField(v);
  return s === null ? "" : s.replace(/\D+/g, "");
}

/** The contract's phone rule: at least 10 digits, the last 10 kept (drops a leading US 1). */
export function phone10(v: unknown): string | null {
  const d = digitsOf(v);
  return d.length >= 10 ? d.slice(-10) : null;
}

/** A positive integer id from a number or a numeric string, else null. */
export function idField(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\s*\d{1,15}\s*$/.test(v) ? Number(v) : NaN;
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
