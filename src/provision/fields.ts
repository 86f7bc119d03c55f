// The fields of a provisioned object, each declared once: what the file may write (its TypeBox
// schema), what a created object takes when the file leaves it out, whether `null` clears it, and
// how it is stored. The file's schema (model.ts), the merge of a file object with its stored row,
// the dry run's and the audit log's list of changes, and the upsert's column lists (upsert.ts)
// are all derived from these tables, so a new field is one entry in one of them.
import { Type as t, type Static, type TObject, type TOptional, type TSchema } from "@sinclair/typebox";
import type postgres from "postgres";
import type { Tx } from "../db/client";

/** `initial` of a field that an object must be given to be created (`orgs[].name`). */
export const REQUIRED: unique symbol = Symbol("required to create");

type Fragment = postgres.PendingQuery<postgres.Row[]>;

export interface Field<S extends TSchema = TSchema, A extends boolean = boolean> {
  /** What the file may write (for a merged object: any of its fields; `null` where clearable). */
  schema: S;
  /** Written in every object, also when it exists (`org_id`: a forgotten one must not widen a grant). */
  always: A;
  /** What a created object takes when the file leaves the field out; REQUIRED: it must be given. */
  initial: unknown;
  /** Whether `null` may be written: the field may be empty, and null stores `cleared`. */
  clearable: boolean;
  cleared?: unknown;
  /**
   * An object merged field by field with the stored one (absent fields keep theirs); `complete`
   * is the schema the merged value must then satisfy (`sms` needs all four of its fields).
   */
  complete?: TObject;
  /** Never shown: a dry run prints "(changed)", the audit log "changed". Sealed at rest. */
  secret?: boolean;
  /** The sub-fields of a merged object that are secrets. */
  secrets?: readonly string[];
  /** A list compared as a set (its order means nothing): `dni_pools[].numbers`. */
  unordered?: boolean;
  /** A merged object's values for the fields left out when none is stored yet (billing's amounts). */
  defaults?: Record<string, unknown>;
  /** The value stored when one is given, when it is not simply the given one (a calendar's links add up). */
  combine?: (stored: unknown, given: unknown) => unknown;
  /** The given value in its stored form, so equal values compare equal (emails lowercased). */
  normalize?: (given: unknown) => unknown;
  /**
   * The stored column when it is not the field's name; null when the field lives in another
   * table, which the section writes itself (an org's `billing`, a pool's `numbers`).
   */
  column?: string | null;
  /** The stored value in the file's form, as a select expression over the section's table `t`. */
  load?: (tx: Tx) => Fragment;
  /** The columns (and their values) that store a value (default: the column, as given). */
  store?: (value: unknown, tx: Tx) => Record<string, unknown>;
}

export type Fields = Record<string, Field>;

interface More {
  column?: string | null;
  defaults?: Record<string, unknown>;
  combine?: (stored: unknown, given: unknown) => unknown;
  normalize?: (given: unknown) => unknown;
  load?: (tx: Tx) => Fragment;
  store?: (value: unknown, tx: Tx) => Record<string, unknown>;
  secret?: boolean;
  unordered?: boolean;
}

/** A field that cannot be empty: `null` is refused (`orgs[].timezone`, `calendars[].slot_minutes`). */
export function field<S extends TSchema>(schema: S, initial: unknown, more: More = {}): Field<S, false> {
  return { schema, always: false, initial, clearable: false, ...more };
}

/** A field written in every object (`org_id`, a list's `campaign_id`). */
export function always<S extends TSchema>(schema: S, more: More = {}): Field<S, true> {
  return { schema, always: true, initial: REQUIRED, clearable: false, ...more };
}

/** A field that may be empty: `null` stores `cleared` ("" for a name, null for a subject). */
export function clearable<S extends TSchema>(schema: S, initial: unknown, cleared: unknown, more: More = {}) {
  const f: Field<ReturnType<typeof orNull<S>>, false> = { schema: orNull(schema), always: false, initial, clearable: true, cleared, ...more };
  return f;
}

/**
 * An object stored whole (a jsonb column or a row of its own) that the file may give in part: the
 * given fields replace the stored ones; `null` removes it. Given while none is stored, it must be
 * complete.
 */
export function merged<S extends TObject>(complete: S, more: More & { secrets?: readonly string[] } = {}) {
  const f: Field<ReturnType<typeof orNull<ReturnType<typeof partialOf<S>>>>, false> = {
    schema: orNull(partialOf(complete)),
    always: false,
    initial: null,
    clearable: true,
    cleared: null,
    complete,
    ...more,
  };
  return f;
}

/** `S` or null; `nullable` lets validate.ts report a bad non-null value by the inner schema's rules. */
export function orNull<S extends TSchema>(schema: S) {
  const inner = (schema as { expected?: string }).expected ?? kindOf(schema);
  return t.Union([schema, t.Null()], { expected: `${inner} or null`, nullable: true });
}

function partialOf<S extends TObject>(schema: S) {
  return t.Partial(schema, { additionalProperties: false });
}

function kindOf(schema: TSchema): string {
  const type = (schema as { type?: unknown }).type;
  return typeof type === "string" ? type : "value";
}

type FieldProps<F extends Fields> = {
  [P in keyof F]: F[P] extends Field<infer S, true> ? S : F[P] extends Field<infer S, false> ? TOptional<S> : never;
};

/** The closed object schema of a section's objects: its key, then its fields. */
export function objectSchema<K extends string, KS extends TSchema, F extends Fields>(key: K, keySchema: KS, fields: F) {
  const props: Record<string, TSchema> = { [key]: keySchema };
  for (const [name, f] of Object.entries(fields)) props[name] = f.always ? f.schema : t.Optional(f.schema);
  return t.Object(props, { additionalProperties: false }) as unknown as TObject<{ [P in K]: KS } & FieldProps<F>>;
}

export type ObjectOf<S extends TSchema> = Static<S>;

/** A value as the file writes it, for comparisons: objects by their keys, lists in order (or as sets). */
export function sameValue(a: unknown, b: unknown, unordered = false): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    const [x, y] = unordered ? [sortedCopy(a), sortedCopy(b)] : [a, b];
    return x.every((v, i) => sameValue(v, y[i]));
  }
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const sortedCopy = (xs: unknown[]) => [...xs].sort((p, q) => (JSON.stringify(p) < JSON.stringify(q) ? -1 : 1));
