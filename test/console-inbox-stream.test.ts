// The inbox's event stream (GET /console/inbox/stream, issue 29 "Live"): one per signed-in tab,
// through the pipeline with the session; only the viewer's organization's changes; each with its
// feed id, so a reconnection with Last-Event-ID gets exactly what it missed — nothing lost, nothing
// repeated; a tab asking from before the feed's retention is told to reload; closing the tab frees
// its subscription. The served app's own sequencer and LISTEN deliver the changes.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.parse("2026-01-14T17:00:00Z"));
let acme: ConsoleClient;
let bolt: ConsoleClient;
let phones = 0;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock });
  const [m, b] = await Promise.all([makeUser(db.sql, { role: "manager", orgId: 1 }), makeUser(db.sql, { role: "agent", orgId: 2, id: "agent9" })]);
  acme = await signIn(app.base, m.email, m.password);
  bolt = await signIn(app.base, b.email, b.password);
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

/** An inbound text for a new lead of `list` (101: Acme, 201: Bolt); its conversation's id. */
async function textIn(list = 101): Promise<number> {
  const org = list === 201 ? 2 : 1;
  const [{ id }] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name) values (${list}, ${`512${String(7_100_000 + ++phones)}`}, 'Lee') returning id`;
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status) values (${id}, ${org}, 'sms', 'in', 'secret text', 'received')`;
  return (await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${id}`)[0]!.id;
}

interface Event {
  id: string | null;
  event: string;
  data: string;
}

/** A stream opened as a browser's EventSource opens it; `until` reads events until it says enough. */
function open(client: ConsoleClient, headers: Record<string, string> = {}, query = "") {
  const ctl = new AbortController();
  const res = fetch(`${app.base}/console/inbox/stream${query}`, { headers: { cookie: client.cookie, accept: "text/event-stream", ...headers }, signal: ctl.signal });
  const events: Event[] = [];
  let buffer = "";
  let reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> } | null = null;
  const decoder = new TextDecoder();
  async function until(enough: (events: Event[]) => boolean, timeoutMs = 20_000): Promise<Event[]> {
    const r = await res;
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    reader ??= r.body!.getReader() as unknown as { read(): Promise<{ value?: Uint8Array; done: boolean }> };
    const rd = reader;
    const deadline = Date.now() + timeoutMs;
    while (!enough(events)) {
      if (Date.now() > deadline) throw new Error(`stream: not enough events: ${JSON.stringify(events)}`);
      const { value, done } = await rd.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const e: Event = { id: null, event: "message", data: "" };
        let real = false;
        for (const line of block.split("\n")) {
          if (line.startsWith(":") || line.startsWith("retry:")) continue;
          const [k, ...v] = line.split(":");
          const value = v.join(":").replace(/^ /, "");
          if (k === "id") e.id = value;
          if (k === "event") e.event = value;
          if (k === "data") e.data = value;
          real = true;
        }
        if (real) events.push(e);
      }
    }
    return events;
  }
  return { until, close: () => ctl.abort(), events };
}

const changes = (events: Event[]) => events.filter((e) => e.event === "change").map((e) => ({ id: Number(e.id), ...JSON.parse(e.data) }));

describe("the inbox's event stream", () => {
  test("without a live session: 200, one signed-out event (the sign-in page, the inbox as next) with a day's retry, then the end — never a refusal the browser would retry", async () => {
    const expectSignedOut = async (r: Response) => {
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toContain("text/event-stream");
      expect(r.headers.get("cache-control")).toBe("no-store");
      // The whole body: the stream ends (reading it to the end returns).
      const text = await r.text();
      expect(text).toBe('retry: 86400000\nevent: signed-out\ndata: {"location":"/console/login?next=%2Fconsole%2Finbox"}\n\n');
    };
    // No cookie, a cookie that names no session, a Last-Event-ID reconnection.
    await expectSignedOut(await fetch(`${app.base}/console/inbox/stream`, { headers: { accept: "text/event-stream" } }));
    await expectSignedOut(await fetch(`${app.base}/console/inbox/stream?after=3`, { headers: { cookie: "leadline_session=" + "x".repeat(43), "last-event-id": "7" } }));
    // A session signed out, and one that expired (its last request more than two hours ago).
    const m = await makeUser(db.sql, { role: "agent", orgId: 1 });
    const gone = await signIn(app.base, m.email, m.password);
    expect((await gone.post("/console/logout")).status).toBe(303);
    await expectSignedOut(await fetch(`${app.base}/console/inbox/stream`, { headers: { cookie: gone.cookie } }));
    const idle = await signIn(app.base, m.email, m.password);
    await db.sql`update console_sessions set seen_at = seen_at - interval '3 hours' where user_id = ${m.id} and revoked_at is null`;
    await expectSignedOut(await fetch(`${app.base}/console/inbox/stream`, { headers: { cookie: idle.cookie } }));
    // A malformed query is still only the signed-out event (no 500, no other answer).
    await expectSignedOut(await fetch(`${app.base}/console/inbox/stream?after=%00zz`, { headers: {} }));
  });

  test("an open stream whose session ends (signed out in another tab) says signed-out and ends", async () => {
    const m = await makeUser(db.sql, { role: "agent", orgId: 1 });
    const tab = await signIn(app.base, m.email, m.password);
    const s = open(tab);
    await s.until(() => true, 1_000).catch(() => []);
    // Signed out elsewhere: the other tab shares the cookie.
    expect((await tab.post("/console/logout")).status).toBe(303);
    const got = await s.until((ev) => ev.some((e) => e.event === "signed-out"));
    const last = got.at(-1)!;
    expect(last.event).toBe("signed-out");
    expect(JSON.parse(last.data)).toEqual({ location: "/console/login?next=%2Fconsole%2Finbox" });
    // Then the end: the stream closes (no heartbeat after it).
    const n = got.length;
    expect(await s.until(() => false, 15_000).then(() => "ended", (e) => String(e))).toBe("ended");
    expect(s.events.length).toBe(n);
    s.close();
  });

  test("only the viewer's organization's changes, each with its feed id; no message text", async () => {
    const s = open(acme);
    const o = open(bolt);
    await s.until(() => true, 5_000).catch(() => []);
    const theirs = await textIn(201);
    const mine = await textIn(101);
    const got = await s.until((ev) => changes(ev).some((c) => c.conversation === mine));
    const boltGot = await o.until((ev) => changes(ev).some((c) => c.conversation === theirs));
    expect(changes(got).map((c) => c.conversation)).not.toContain(theirs);
    expect(changes(boltGot).map((c) => c.conversation)).not.toContain(mine);
    expect(changes(got).find((c) => c.conversation === mine)).toMatchObject({ kind: expect.any(String), status: "open" });
    for (const e of got) expect(e.data).not.toContain("secret text");
    // Ids only go up.
    const ids = changes(got).map((c) => c.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    s.close();
    o.close();
  });

  test("a reconnection with Last-Event-ID gets exactly what it missed: nothing lost, nothing repeated", async () => {
    const s = open(acme);
    const first = await textIn();
    const seen = await s.until((ev) => changes(ev).some((c) => c.conversation === first));
    const lastSeen = changes(seen).at(-1)!.id;
    s.close();
    // While the tab is away: its organization's changes and another's.
    const missed = [await textIn(), await textIn(201), await textIn()];
    await db.sql`update conversations set status = 'closed' where id = ${missed[0]!}`;
    const expected = async () =>
      (await db.sql<{ id: number }[]>`select id from workspace_changes where org_id = 1 and id > ${lastSeen} order by id`).map((r) => Number(r.id));
    // Wait until the sequencer has numbered them all.
    for (let i = 0; i < 200 && (await db.sql`select 1 from workspace_pending limit 1`).length > 0; i++) await Bun.sleep(25);
    const want = await expected();
    expect(want.length).toBeGreaterThanOrEqual(4);
    const back = open(acme, { "last-event-id": String(lastSeen) });
    const got = changes(await back.until((ev) => changes(ev).length >= want.length));
    expect(got.map((c) => c.id)).toEqual(want);
    expect(got.map((c) => c.conversation)).not.toContain(missed[1]);
    back.close();
    // The page's own `after` works the same; Last-Event-ID wins over it.
    const again = open(acme, { "last-event-id": String(want.at(-1)!) }, `?after=${lastSeen}`);
    const newer = await textIn();
    const after = changes(await again.until((ev) => changes(ev).some((c) => c.conversation === newer)));
    expect(after.every((c) => c.id > want.at(-1)!)).toBe(true);
    again.close();
  });

  test("a tab asking from before what retention pruned, or from another database's ids, is told to reload", async () => {
    const s = open(acme, { "last-event-id": "999999999999" });
    const [e] = await s.until((ev) => ev.length > 0);
    expect(e!.event).toBe("reset");
    s.close();
  });

  test("closing the tab frees its subscription", async () => {
    const hub = app.running.deps.feed;
    // The earlier tests' closed tabs are gone first.
    for (let i = 0; i < 200 && hub.subscribers > 0; i++) await Bun.sleep(25);
    const before = hub.subscribers;
    expect(before).toBe(0);
    const s = open(acme);
    await s.until((ev) => ev.length > 0 || hub.subscribers > before, 2_000).catch(() => []);
    for (let i = 0; i < 100 && hub.subscribers === before; i++) await Bun.sleep(20);
    expect(hub.subscribers).toBe(before + 1);
    s.close();
    for (let i = 0; i < 200 && hub.subscribers > before; i++) await Bun.sleep(25);
    expect(hub.subscribers).toBe(before);
  });

  test("stopping the instance ends its open streams (a graceful stop does not wait for the tabs)", async () => {
    const other = await startApp(db.url, {}, { clock });
    const res = await fetch(`${other.base}/console/inbox/stream`, { headers: { cookie: acme.cookie } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await other.stop();
    let done = false;
    for (let i = 0; i < 10 && !done; i++) done = (await reader.read()).done;
    expect(done).toBe(true);
  });
});
