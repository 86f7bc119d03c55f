// Where a reminder batch's message insert spends its time (issue 31, bench/RESULTS.md "Reminder
// scheduler"): EXPLAIN ANALYZE of one statement inserting BATCH (default 200) automation SMS for
// as many leads, shaped as insertChargedMany (src/messages/queries.ts) writes them, with the
// triggers as they are now (sql/0031: once per statement) and, for comparison on the same machine
// at the same moment, with the landed per-row triggers of sql/0023 and sql/0027 put back inside
// the measured transaction. Two shapes: leads with no conversation yet (each message makes one, as
// in bench/reminders.ts) and leads whose conversation exists (each message updates it); and, to
// show the share of the feed rows, the new triggers with conversations_feed disabled. Every
// insert is rolled back; the median of ROUNDS (default 7) inserts of different leads is reported.
//
//   node_modules/.bin/bun bench/reminders-insert.ts
import { landedPerRow } from "../test/harness/per-row-triggers";
import { num, Suite } from "./lib";

const suite = new Suite("reminders-insert", "Reminder batch insert", ["reminders-insert"]);
const BATCH = num("BATCH", 200);
const ROUNDS = num("ROUNDS", 7);
const LEADS = BATCH * ROUNDS * 2;

interface Explained {
  "Execution Time": number;
  Triggers?: { "Trigger Name": string; Time: number; Calls: number }[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await suite.run(async () => {
  const sql = await suite.database();
  await suite.seedAccount();
  const perRow = landedPerRow();
  await sql`insert into users (id, org_id, name, role) values ('agent7', 1, 'Dana', 'agent')`;
  suite.say(`seeding ${LEADS} leads, half of them with a conversation and earlier messages`);
  await sql`
    insert into leads (list_id, phone, first_name, last_name, state)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'TX' from generate_series(1, ${LEADS}::int) i`;
  const ids = (await sql<{ id: number }[]>`select id::int from leads order by id`).map((r) => r.id);
  const talked = ids.slice(LEADS / 2);
  // The second half's conversations: an inbound text each, then an agent's reply (open, assigned).
  for (const [direction, actor] of [["in", ""], ["out", "agent7"]]) {
    await sql`
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
      select id, 1, 'sms', ${direction}, ${actor === "" ? "" : "user"}, ${actor}, 'Earlier', ${direction === "in" ? "received" : "sent"}, now() - interval '1 day'
      from unnest(${talked}::int[]) id`;
  }
  await sql`vacuum analyze leads, messages, conversations, report_daily, report_asks`;

  const rows: { shape: string; triggers: string; total: number; conv: number; report: number; fk: number }[] = [];
  for (const [shape, pool] of [["no conversation yet", ids.slice(0, LEADS / 2)], ["conversation exists", talked]] as const) {
    // The third: the same insert without conversations_feed (its per-row feed rows), to show its share.
    for (const triggers of ["per statement (sql/0031)", "per row (sql/0023, sql/0027)", "per statement, feed trigger off"]) {
      const runs: Explained[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const leads = pool.slice(r * BATCH, (r + 1) * BATCH);
        try {
          await sql.begin(async (tx) => {
            if (triggers.startsWith("per row")) for (const ddl of perRow) await tx.unsafe(ddl);
            if (triggers.endsWith("feed trigger off")) await tx.unsafe("alter table conversations disable trigger conversations_feed");
            const [plan] = await tx.unsafe(
              `explain (analyze, format json)
               insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, subject, body, status, meta,
                                     operation_id, op_scope, request_hash, cost, sending_until, created_at, updated_at)
               select u.lead_id, 1, 'sms', 'out', 'automation', '1', '', 'See you Monday at 10:00 AM CST', 'sending',
                      '{"to":"5125550100"}'::jsonb, 'automation:1:appointment:' || u.lead_id, 1, 'h', 0.0001,
                      now() + interval '1 minute', now(), now()
               from unnest($1::bigint[]) with ordinality as u(lead_id, i) order by u.i
               on conflict (coalesce(op_scope, -1), operation_id) where operation_id is not null do nothing`,
              [leads],
            );
            runs.push((plan["QUERY PLAN"] as Explained[])[0]);
            throw new Error("rollback");
          });
        } catch (err) {
          if (!(err instanceof Error && err.message === "rollback")) throw err;
        }
      }
      const trig = (e: Explained, f: (name: string) => boolean) => (e.Triggers ?? []).filter((t) => f(t["Trigger Name"])).reduce((s, t) => s + t.Time, 0);
      rows.push({
        shape,
        triggers,
        total: median(runs.map((e) => e["Execution Time"])),
        conv: median(runs.map((e) => trig(e, (n) => n === "messages_conversation"))),
        report: median(runs.map((e) => trig(e, (n) => n === "messages_report_insert"))),
        fk: median(runs.map((e) => trig(e, (n) => n.startsWith("RI_")))),
      });
      suite.say(`${shape}, ${triggers}: ${rows.at(-1)!.total.toFixed(0)} ms`);
    }
  }
  suite.notes.push(
    `| ${BATCH} messages in one insert (median of ${ROUNDS}) | triggers | total | messages_conversation | messages_report_insert | lead foreign key |`,
    `|---|---|---:|---:|---:|---:|`,
    ...rows.map((r) => `| ${r.shape} | ${r.triggers} | ${r.total.toFixed(0)} ms | ${r.conv.toFixed(0)} ms | ${r.report.toFixed(0)} ms | ${r.fk.toFixed(0)} ms |`),
  );
  return `EXPLAIN ANALYZE of one insert of ${BATCH} automation SMS, each rolled back.`;
});
