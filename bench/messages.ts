// The messaging suite (issue 7, bench/README.md): each scenario in slices alternating with its
// reference, the median slice ratio counting:
//   intake  lead intake, new phone each (one transaction): the reference notes must reach
//   notes   POST r=messages channel note, new operation_id each: the full send path, one statement
//   b       baseline: bare Elysia + one indexed SELECT (bench/baseline.ts), the reference of:
//   replays POST r=messages with one operation_id already used: the idempotent replay, one statement
//   sms     POST r=messages channel sms, new operation_id each, against a fake Twilio on 127.0.0.1
// Targets on the 2-core machine: notes ≥ intake; replays ≥ 50% of b.
//
//   node_modules/.bin/bun bench/messages.ts      (or `make bench`; options in bench/README.md)
//
// Suite option: BENCH_ONLY (e.g. `notes,replays`: those scenarios, each with its reference).
import { startFakeTwilio } from "../test/harness/fake-twilio";
import { answerChecks, median, options, pct, type Load, type Result, SLICE, Suite } from "./lib";

const suite = new Suite("messages", "Messaging", ["notes", "replays", "sms"]);
const { warmup: WARMUP, rounds: ROUNDS, conns: CONNS, threads: THREADS } = options;
const LEADS = 1000;
const HISTORY = 20_000;
// Keys per scenario: none may reach its hourly limit (api_v1 300, intake 120) in warm-up + run.
const KEYS = { note: 1000, replay: 1000, sms: 300, intake: 2000 };
// A send waits for its provider call: a longer timeout than the other suites'.
const TIMEOUT = 15;

await suite.run(async () => {
  const sql = await suite.database();
  const twilio = await startFakeTwilio();
  await suite.seedAccount();
  await sql`update orgs set sms = ${sql.json({ base_url: twilio.url, account_sid: "ACbench", auth_token: "bench", from: "5125550100" })} where id = 1`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost) values (1, 'active', 'active', 1000000000, 0.0001)`;
  await sql`
    insert into leads (list_id, phone, first_name, last_name, state)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'TX' from generate_series(1, ${LEADS}) i`;
  // A history of messages, as an installation in use has: statements are planned once per
  // connection (plan_cache_mode=force_generic_plan), and a plan made on an empty table scans it.
  await sql`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, operation_id, op_scope, request_hash, result)
    select (i % ${LEADS}) + 1, 1, 'note', 'out', 'api_key', '1', 'history ' || i, 'stored', 'hist-' || i, 1, 'h',
           '{"ok":true,"message_id":' || i || '}'
    from generate_series(1, ${HISTORY}) i`;
  const keys = {
    note: await suite.keys("note", KEYS.note, ["messages:write"]),
    replay: await suite.keys("replay", KEYS.replay, ["messages:write"]),
    sms: await suite.keys("sms", KEYS.sms, ["messages:write"]),
    intake: await suite.keys("intake", KEYS.intake, ["leads:write"]),
  };
  // Only the seeded tables: statistics that call an empty table empty make plans that scan it once it fills.
  await sql`vacuum analyze leads, messages, lead_channels, api_keys`;

  const svc = await suite.service();
  const base = await suite.baseline();

  // The replayed operation: recorded once before the run.
  const replay = (key: string) =>
    fetch(`${svc.url}/hooks/api_v1.php?r=messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ lead_id: 1, channel: "note", body: "replayed", operation_id: "bench-replay" }),
    });
  const first = await replay(keys.replay.keys[0]);
  const firstText = await first.text();
  if (first.status !== 200) throw new Error(`replay seed failed: ${first.status} ${firstText}`);

  /** Rows are counted once requests still in flight when wrk stopped have finished. */
  const settle = () => Bun.sleep(1000);
  const count = async (q: Promise<{ n: number }[]>) => Number((await q)[0].n);
  interface Paired {
    ref: Result;
    x: Result;
    ratios: number[];
  }
  suite.say(`${WARMUP}s warm-up, then ${ROUNDS} slices of ${SLICE}s alternating with the reference, -t${THREADS} -c${CONNS}`);

  /** Both loads warmed up, then the scenario in slices beside its reference. */
  async function paired(x: Load, ref: Load): Promise<Paired> {
    await suite.wrk(ref, WARMUP, false);
    await suite.wrk(x, WARMUP, false);
    const p = await suite.slices(ref, [x]);
    return { ref: p.ref, x: p.xs[0].r, ratios: p.xs[0].ratios };
  }
  /** The reference's row, then the scenario's: the median slice ratio, held to `min` when given. */
  function addRows(p: Paired, ref: { id: string; name: string; checks?: string[] }, x: { id: string; name: string; min?: number; checks: string[] }): void {
    suite.add({ id: ref.id, name: ref.name, r: p.ref, checks: [...(ref.checks ?? []), ...answerChecks(p.ref)] });
    const ratio = median(p.ratios);
    suite.add({
      id: x.id,
      name: x.name,
      r: p.x,
      vs: { ratio, of: ref.id },
      target: x.min === undefined ? undefined : { text: `≥ ${pct(x.min)} of ${ref.id.split("/")[0]}`, pass: ratio >= x.min },
      checks: [`ratio per slice ${p.ratios.map(pct).join(" / ")}`, ...x.checks, ...answerChecks(p.x)],
    });
  }
  const svcLoad = (args: Load["args"]): Load => ({ to: svc, args, timeout: TIMEOUT });
  const B: Load = { to: base, args: { mode: "base_lead", leads: LEADS }, timeout: TIMEOUT };

  if (suite.wanted("notes")) {
    const leads0 = await count(sql`select count(*)::int as n from leads`);
    const notes0 = await count(sql`select count(*)::int as n from messages where channel = 'note'`);
    const p = await paired(svcLoad({ mode: "notes", leads: LEADS, keys: keys.note.file }), svcLoad({ mode: "intake", keys: keys.intake.file }));
    await settle();
    const intakeRows = (await count(sql`select count(*)::int as n from leads`)) - leads0;
    const noteRows = (await count(sql`select count(*)::int as n from messages where channel = 'note'`)) - notes0;
    addRows(
      p,
      { id: "intake", name: "lead intake, new phone each (reference)", checks: [`${intakeRows} leads written (warm-up included)`] },
      {
        id: "notes",
        name: "notes, new operation_id each (full path)",
        min: 1,
        checks: [noteRows >= p.x.requests ? `${noteRows} notes written (warm-up included)` : `FAIL: ${noteRows} notes written for ${p.x.requests} requests`],
      },
    );
  }
  if (suite.wanted("replays")) {
    const p = await paired(svcLoad({ mode: "replays", id: 1, keys: keys.replay.file }), B);
    const replayRows = await count(sql`select count(*)::int as n from messages where operation_id = 'bench-replay'`);
    const sampleText = await (await replay(keys.replay.keys[1])).text();
    addRows(p, { id: "b/replays", name: "b: baseline, bare Elysia + 1 SELECT (beside replays)" }, {
      id: "replays",
      name: "idempotent replays, one operation_id",
      min: 0.5,
      checks: [
        replayRows === 1 ? "1 row" : `FAIL: ${replayRows} rows for one operation_id`,
        sampleText === firstText ? "replay byte-identical" : `FAIL: the replay differs from the first answer: ${sampleText.slice(0, 200)}`,
      ],
    });
  }
  if (suite.wanted("sms")) {
    twilio.reset();
    const p = await paired(svcLoad({ mode: "sms", leads: LEADS, keys: keys.sms.file }), B);
    await settle();
    const smsSent = await count(sql`select count(*)::int as n from messages where channel = 'sms' and status = 'sent'`);
    const smsCalls = twilio.requests.length;
    addRows(p, { id: "b/sms", name: "b: baseline, bare Elysia + 1 SELECT (beside SMS)" }, {
      id: "sms",
      name: "SMS sends against the fake Twilio",
      checks: [smsCalls === smsSent ? `${smsCalls} provider calls, ${smsSent} sent (warm-up included)` : `FAIL: ${smsCalls} provider calls but ${smsSent} sent`],
    });
  }
  await twilio.stop();
  return `wrk -t${THREADS} -c${CONNS}, ${WARMUP}s warm-up of both, then ${ROUNDS} slices of ${SLICE}s alternating with the reference (intake for notes, b for the others); the ratio is the median slice's.`;
});
