// Every outbox row a test wrote, held to the event models (src/events/model.ts): the body's
// envelope and exactly the fields of its type's data. Call at the end of a feature's tests.
import { expect } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import type { Sql } from "../../src/db/client";
import { EVENT_DATA, EventBody } from "../../src/events/model";
import type { EventType } from "../../src/events/types";

export async function expectEventsMatchModels(sql: Sql, types: EventType[]): Promise<void> {
  const rows = await sql<{ id: number; type: string; payload: { type: string; data: unknown } }[]>`
    select id, type, payload from outbox_events order by id`;
  for (const type of types) expect({ type, written: rows.some((r) => r.type === type) }).toEqual({ type, written: true });
  for (const r of rows) {
    const schema = EVENT_DATA[r.type as EventType];
    const problems = [
      ...[...Value.Errors(EventBody, r.payload)].map((e) => `${e.path} ${e.message}`),
      ...(schema ? [...Value.Errors(schema, r.payload.data)].map((e) => `data${e.path} ${e.message}`) : ["unknown type"]),
      ...(r.payload.type === r.type ? [] : [`payload type ${r.payload.type}`]),
    ];
    expect({ event: r.id, type: r.type, problems }).toEqual({ event: r.id, type: r.type, problems: [] });
  }
}
