// A file object against its stored row (operations.md §3): a field the file leaves out keeps the
// stored value (or takes its initial one, for an object created), a field given replaces it, a
// merged object (`sms`, `billing`) replaces only the fields given, `null` clears. The result is
// the object as it will be stored, and the list of what changes, field by field, which the dry
// run prints and the audit log keeps.
import { Value, ValueErrorType } from "@sinclair/typebox/value";
import { inFormOf, openSecret, seal } from "../secrets/seal";
import type { Tx } from "../db/client";
import { REQUIRED, sameValue, type Fields } from "./fields";

/** One field that a run changes; a secret's values are never kept here. */
export interface Change {
  field: string;
  /** null for a created object's field */
  from: unknown;
  to: unknown;
  secret: boolean;
}

export type Row = Record<string, unknown>;

export interface Merged {
  /** Every field's value as it will be stored (secrets in their stored, sealed form). */
  target: Row;
  changes: Change[];
  problems: string[];
}

/**
 * `stored`: the object's row in the file's form (null: not stored yet); `given`: the file's
 * object; `path` (`orgs[0]`) and `what` (`org 1`) name it in problems; `secretKey` seals secrets.
 */
export function mergeObject(fields: Fields, stored: Row | null, given: Row, path: string, what: string, secretKey: Buffer | null): Merged {
  const target: Row = {};
  const problems: string[] = [];
  for (const [name, f] of Object.entries(fields)) {
    const value = f.normalize && given[name] != null ? f.normalize(given[name]) : given[name];
    const before = stored === null ? undefined : stored[name];
    if (value === undefined) {
      if (stored !== null) target[name] = before;
      else if (f.initial === REQUIRED) problems.push(`${path}.${name}: required to create ${what}`);
      else target[name] = f.initial;
    } else if (value === null) {
      // A field that may be empty is cleared; where null is a value of its own (org_id: the house), it is that.
      target[name] = f.clearable ? f.cleared : null;
    } else if (f.complete) {
      const base = (before as Row | null | undefined) ?? null;
      const next: Row = { ...(base ?? f.defaults ?? {}) };
      for (const [sub, v] of Object.entries(value as Row)) {
        next[sub] = f.secrets?.includes(sub) ? storedForm(secretKey, base?.[sub] as string | undefined, v as string) : v;
      }
      // The given fields were checked with the file; what can still be wrong is a field missing.
      for (const err of Value.Errors(f.complete, next)) {
        if (err.type === ValueErrorType.ObjectRequiredProperty) problems.push(`${path}.${name}${err.path.replaceAll("/", ".")}: required to set up ${name} (${what} has none stored)`);
      }
      target[name] = next;
    } else if (f.secret) {
      target[name] = storedForm(secretKey, before as string | undefined, value as string);
    } else if (f.combine) {
      target[name] = f.combine(before ?? f.initial, value);
    } else {
      target[name] = value;
    }
  }
  return { target, changes: changesOf(fields, stored, target), problems };
}

/**
 * The stored form of a secret the file gives: the stored value when it already holds exactly that
 * in the form the key gives (so that applying the same file again writes nothing, though sealing
 * draws a fresh IV each time), else the value sealed (or as given, without a key).
 */
export function storedForm(key: Buffer | null, existing: string | null | undefined, plaintext: string): string {
  if (existing != null && inFormOf(key, existing) && openSecret(key, existing) === plaintext) return existing;
  return seal(key, plaintext);
}

/**
 * What differs between the stored object and the target, a merged object field by field
 * (`sms.from`); for an object created (`stored` null), every field that holds something.
 */
export function changesOf(fields: Fields, stored: Row | null, target: Row): Change[] {
  const out: Change[] = [];
  for (const [name, f] of Object.entries(fields)) {
    if (!(name in target)) continue;
    const to = target[name];
    const from = stored === null ? null : stored[name];
    if (stored === null && isEmpty(to)) continue;
    if (f.complete) {
      const [a, b] = [(from ?? {}) as Row, (to ?? {}) as Row];
      if (from === null && to === null) continue;
      for (const sub of [...new Set([...Object.keys(b), ...Object.keys(a)])]) {
        const x = a[sub] ?? null;
        const y = b[sub] ?? null;
        if (!sameValue(x, y)) out.push({ field: `${name}.${sub}`, from: x, to: y, secret: f.secrets?.includes(sub) ?? false });
      }
      continue;
    }
    if (!sameValue(from ?? null, to ?? null, f.unordered)) out.push({ field: name, from: from ?? null, to: to ?? null, secret: f.secret ?? false });
  }
  return out;
}

const isEmpty = (v: unknown) =>
  v === null || v === undefined || v === "" || (Array.isArray(v) && v.length === 0) || (typeof v === "object" && v !== null && Object.keys(v).length === 0);

/** The columns that store an object's target (fields kept in other tables are left out). */
export function columnsOf(fields: Fields, target: Row, tx: Tx): Row {
  const row: Row = {};
  for (const [name, f] of Object.entries(fields)) {
    if (f.column === null || !(name in target)) continue;
    Object.assign(row, f.store ? f.store(target[name], tx) : { [f.column ?? name]: target[name] });
  }
  return row;
}
