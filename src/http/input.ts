// The shape check of loosely typed input (JSON or form fields): each field a model declares is
// kept when it has one of its documented types and dropped otherwise, so that junk in a field
// reads as that field being absent, as the contract's lenient rules want. The lenient rules
// proper (numeric strings, truncation, truthy values, invalid email → empty) then run once, in the
// model's normalizing step. Checkers are compiled once, at start.
import type { Static, TObject, TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";

export type Fields<T extends TObject> = Partial<Static<T>>;

export function fieldChecker<T extends TObject>(schema: T): (fields: Record<string, unknown>) => Fields<T> {
  const checks = Object.entries(schema.properties).map(([name, s]) => [name, TypeCompiler.Compile(s)] as const);
  return (fields) => {
    const out: Record<string, unknown> = {};
    for (const [name, check] of checks) {
      const v = fields[name];
      if (v !== undefined && check.Check(v)) out[name] = v;
    }
    return out as Fields<T>;
  };
}

/**
 * The first way `value` misses `schema`, as `path.to.field: message` under `path` (a service's
 * input that is not loose: a list of statuses, a saved reply); null when it matches.
 */
export function shapeProblem(schema: TSchema, value: unknown, path: string): string | null {
  if (Value.Check(schema, value)) return null;
  const first = Value.Errors(schema, value).First();
  return `${path}${first?.path.replace(/\/(\d+)/g, "[$1]").replaceAll("/", ".") ?? ""}: ${first?.message ?? "invalid"}`;
}
