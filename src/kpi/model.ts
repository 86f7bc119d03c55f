// KPI ingest input: a single point, a batch {org_id?, points}, or a bare array of points. Points
// are checked one by one, so that a batch is processed partially (api-v1.md rule 7).
import { Type as t } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { AppError } from "../errors";
import { cleanText, idField, NUMERIC_PATTERN } from "../http/fields";
import type { Input } from "../http/route";

export const MAX_POINTS = 500;

// A point's fields, each checked on its own (compiled once): a point that fails one is reported by
// its index with that field's code, while its siblings are still upserted (api-v1.md rule 7).
const MetricKey = t.String({ pattern: "^[A-Za-z0-9_.:-]{1,60}$", description: "unknown keys are registered (sum)" });
const Value = t.Union([t.Number(), t.String({ pattern: NUMERIC_PATTERN, description: "numeric string" })]);
const Day = t.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "default: the server's current date; only the shape is checked" });
const metricKeyOk = TypeCompiler.Compile(MetricKey);
const valueOk = TypeCompiler.Compile(Value);
const dayOk = TypeCompiler.Compile(Day);

export const KpiPointInput = t.Object(
  {
    metric_key: MetricKey,
    value: Value,
    day: t.Optional(Day),
    dim_key: t.Optional(t.Union([t.String({ maxLength: 80 }), t.Number()])),
    org_id: t.Optional(t.Integer({ description: "platform-global keys only" })),
  },
  { additionalProperties: true },
);

export const KpiInput = t.Union([
  KpiPointInput,
  t.Object({ org_id: t.Optional(t.Integer()), points: t.Array(KpiPointInput, { minItems: 1, maxItems: MAX_POINTS }) }),
  t.Array(KpiPointInput, { minItems: 1, maxItems: MAX_POINTS }),
]);

export const KpiResult = t.Object(
  {
    ok: t.Literal(true),
    upserts: t.Integer({ minimum: 1 }),
    errors: t.Optional(t.Array(t.Object({ index: t.Integer(), error: t.String() }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
);

export interface KpiPoint {
  index: number;
  metricKey: string;
  value: number;
  day: string | null;
  dimKey: string;
  orgId: number | null;
}

export interface PointError {
  index: number;
  error: string;
}


const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The raw points and the batch-level org, or the contract's body error. */
export function splitBatch(value: unknown): { points: unknown[]; batchOrg: unknown } {
  let points: unknown;
  let batchOrg: unknown = undefined;
  if (Array.isArray(value)) points = value;
  else if (isObject(value) && "points" in value) {
    points = value.points;
    batchOrg = value.org_id;
  } else if (isObject(value)) points = [value];
  else throw new AppError("malformed_body", "expected a point, a batch or an array of points");
  if (!Array.isArray(points)) throw new AppError("malformed_body", "points must be an array");
  if (points.length === 0) throw new AppError("no_points");
  if (points.length > MAX_POINTS) throw new AppError("too_many_points", `at most ${MAX_POINTS} points`);
  return { points, batchOrg };
}

function numericValue(v: unknown): number | null {
  const n = valueOk.Check(v) ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

export function parsePoint(raw: unknown, index: number, batchOrg: unknown): KpiPoint | PointError {
  if (!isObject(raw)) return { index, error: "bad_point" };
  if (!metricKeyOk.Check(raw.metric_key)) return { index, error: "bad_metric_key" };
  const metricKey = raw.metric_key as string;
  const value = numericValue(raw.value);
  if (value === null) return { index, error: "bad_value" };
  let day: string | null = null;
  if (raw.day !== undefined && raw.day !== null && raw.day !== "") {
    if (!dayOk.Check(raw.day)) return { index, error: "bad_day" };
    day = raw.day;
  }
  let dimKey = "";
  if (raw.dim_key !== undefined && raw.dim_key !== null) {
    if (typeof raw.dim_key !== "string" && typeof raw.dim_key !== "number") return { index, error: "bad_dim_key" };
    dimKey = cleanText(String(raw.dim_key));
    if (Array.from(dimKey).length > 80) return { index, error: "bad_dim_key" };
  }
  const orgId = idField(raw.org_id ?? batchOrg);
  return { index, metricKey, value, day, dimKey, orgId };
}

/** A batch as read: its valid points (the key's own organization not yet applied) and the indexed errors. */
export interface KpiBatch {
  valid: KpiPoint[];
  errors: PointError[];
}

/** The ingest body: a point, a batch or a bare array, shape-checked point by point. */
export const kpiInput: Input<KpiBatch> = {
  schema: KpiInput,
  read(value) {
    if (value === undefined) throw new AppError("malformed_json", "empty body");
    const { points, batchOrg } = splitBatch(value);
    const batch: KpiBatch = { valid: [], errors: [] };
    points.forEach((raw, i) => {
      const p = parsePoint(raw, i, batchOrg);
      if ("error" in p) batch.errors.push(p);
      else batch.valid.push(p);
    });
    return batch;
  },
};
