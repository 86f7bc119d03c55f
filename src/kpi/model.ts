// KPI ingest input: a single point, a batch {org_id?, points}, or a bare array of points. Points
// are checked one by one, so that a batch is processed partially (api-v1.md rule 7).
import { Type as t } from "@sinclair/typebox";
import { AppError } from "../errors";
import { cleanText, idField, isNumericText } from "../http/fields";

export const MAX_POINTS = 500;

export const KpiPointInput = t.Object(
  {
    metric_key: t.String({ pattern: "^[A-Za-z0-9_.:-]{1,60}$", description: "unknown keys are registered (sum)" }),
    value: t.Union([t.Number(), t.String({ description: "numeric string" })]),
    day: t.Optional(t.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "default: the server's current date" })),
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

const METRIC_KEY = /^[A-Za-z0-9_.:-]{1,60}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

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
  const n = typeof v === "number" ? v : typeof v === "string" && isNumericText(v) ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

export function parsePoint(raw: unknown, index: number, batchOrg: unknown): KpiPoint | PointError {
  if (!isObject(raw)) return { index, error: "bad_point" };
  const metricKey = typeof raw.metric_key === "string" ? raw.metric_key : null;
  if (metricKey === null || !METRIC_KEY.test(metricKey)) return { index, error: "bad_metric_key" };
  const value = numericValue(raw.value);
  if (value === null) return { index, error: "bad_value" };
  let day: string | null = null;
  if (raw.day !== undefined && raw.day !== null && raw.day !== "") {
    if (typeof raw.day !== "string" || !DAY.test(raw.day)) return { index, error: "bad_day" };
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
