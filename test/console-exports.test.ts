// The console's CSV exports (leads and calls) over HTTP, as issue 27.8 wants them: exporting is a
// manager's right (and an admin's) unless the organization's settings grant it to agents
// (provisioning: orgs[].agents_export), and every export leaves an audit row — who, which filter,
// how many rows — written before its first byte, its count filled in when the download ends,
// a download abandoned midway included.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connect as tcpConnect } from "node:net";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning } from "../src/provision/validate";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
const as: Record<"manager" | "agent" | "boltAgent" | "admin", ConsoleClient> = {} as never;
const ids: Record<string, string> = {};

type ExportRow = { id: string; org_id: number | null; actor_type: string; actor_id: string; action: string; target: string; address: string; details: { filter: Record<string, unknown>; rows: number | null; outcome: string | null } };

const exportsSoFar = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from audit_log where action like 'export.%'`)[0].n;

/** The newest export row once its download has ended (the outcome is written after the last byte). */
async function endedExport(action: string): Promise<ExportRow> {
  for (let i = 0; ; i++) {
    const [row] = await db.sql<ExportRow[]>`select id::text, org_id, actor_type, actor_id, action, target, address, details from audit_log where action = ${action} order by audit_log.id desc limit 1`;
    if ((row && row.details.outcome !== null) || i >= 250) return row;
    await Bun.sleep(20);
  }
}

const lines = (body: unknown) => (body as string).trimEnd().split("\r\n");

/** Applies a provisioning file as `leadline provision` does (validated, then applied). */
const provision = (file: unknown) => applyProvisioning(db.sql, parseProvisioning(JSON.stringify(file)));

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  for (let i = 0; i < 5; i++) await makeLead(db.sql, { phone: `512555020${i}`, first: "Export", last: `Acme${i}` });
  await makeLead(db.sql, { list: 201, phone: "7375550200", first: "Export", last: "Bolt" });
  await db.sql`insert into calls (phone, status, secs, agent, occurred_at, lead_id)
    select '5125550200', 'ANSWERED', 30, case when i % 2 = 0 then 'agent7' else 'other' end, now() - i * interval '1 minute', (select min(id) from leads where list_id = 101)
    from generate_series(1, 6) i`;
  app = await startApp(db.url);
  const users = {
    manager: await makeUser(db.sql, { role: "manager", orgId: 1 }),
    agent: await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" }),
    boltAgent: await makeUser(db.sql, { role: "agent", orgId: 2, id: "agent9" }),
    admin: await makeUser(db.sql, { role: "admin", orgId: null }),
  };
  for (const [role, u] of Object.entries(users)) {
    ids[role] = u.id;
    as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
  }
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("who may export", () => {
  test("agents may not by default: both exports are the 404 page, the pages offer no export, nothing is audited", async () => {
    const before = await exportsSoFar();
    for (const path of ["/console/leads.csv", "/console/leads.csv?q=export", "/console/calls.csv"]) {
      const r = await as.agent.get(path);
      expect(r.status).toBe(404);
      expect(r.headers.get("content-type")).toStartWith("text/html");
      expect(r.body).not.toContain("Export");
    }
    expect((await as.agent.get("/console/leads")).body).not.toContain("/console/leads.csv");
    expect((await as.agent.get("/console/calls")).body).not.toContain("/console/calls.csv");
    expect(await exportsSoFar()).toBe(before);
    // Managers see the links.
    expect((await as.manager.get("/console/leads")).body).toContain("/console/leads.csv");
    expect((await as.manager.get("/console/calls")).body).toContain("/console/calls.csv");
  });

  test("the organization grants it to its agents in the provisioning file (orgs[].agents_export); a later file without the field keeps it", async () => {
    await provision({ orgs: [{ id: 1, name: "Acme", company: "Acme Roofing LLC", agents_export: true }] });
    const leads = await as.agent.get("/console/leads.csv");
    expect(leads.status).toBe(200);
    expect(lines(leads.body)).toHaveLength(1 + 5);
    // An agent's calls export is its own calls only, as its Calls page.
    const calls = await as.agent.get("/console/calls.csv");
    expect(lines(calls.body)).toHaveLength(1 + 3);
    expect((await as.agent.get("/console/leads")).body).toContain("/console/leads.csv");
    // Organization 1's setting is not organization 2's.
    expect((await as.boltAgent.get("/console/leads.csv")).status).toBe(404);
    // Left out of a later file, the setting stays; set false, it is withdrawn.
    await provision({ orgs: [{ id: 1, name: "Acme", company: "Acme Roofing LLC" }] });
    expect((await as.agent.get("/console/leads.csv")).status).toBe(200);
    await provision({ orgs: [{ id: 1, name: "Acme", company: "Acme Roofing LLC", agents_export: false }] });
    expect((await as.agent.get("/console/leads.csv")).status).toBe(404);
    expect((await as.agent.get("/console/calls.csv")).status).toBe(404);
    // A value that is not a boolean is refused, naming the field.
    expect(() => parseProvisioning(JSON.stringify({ orgs: [{ id: 1, name: "Acme", agents_export: "yes" }] }))).toThrow(/agents_export/);
  });
});

describe("every export is audited", () => {
  test("leads: who, the filter, the rows sent, in the organization's log", async () => {
    const r = await as.manager.get("/console/leads.csv?q=export&status=&list=101");
    expect(r.status).toBe(200);
    const row = await endedExport("export.leads");
    expect(row).toMatchObject({ org_id: 1, actor_type: "user", actor_id: ids.manager, target: "leads" });
    expect(row.address).not.toBe("");
    expect(row.details).toEqual({ filter: { q: "export", list: 101 }, rows: lines(r.body).length - 1, outcome: "complete" });
    expect(row.details.rows).toBe(5);
  });

  test("calls: the filter; an admin's export of one organization is in that organization's log; an empty export counts 0", async () => {
    const r = await as.manager.get("/console/calls.csv?agent=agent7&from=2000-01-01");
    const row = await endedExport("export.calls");
    expect(row).toMatchObject({ org_id: 1, actor_id: ids.manager, target: "calls" });
    expect(row.details).toEqual({ filter: { agent: "agent7", from: "2000-01-01", org: 1 }, rows: 3, outcome: "complete" });
    expect(lines(r.body)).toHaveLength(1 + 3);
    await as.admin.get("/console/calls.csv?org=2");
    const admins = await endedExport("export.calls");
    expect(admins).toMatchObject({ org_id: 2, actor_id: ids.admin, details: { filter: { org: 2 }, rows: 0, outcome: "complete" } });
  });

  test("managers read export rows in their audit log, as the action family export.", async () => {
    const page = (await as.manager.get("/console/audit?action=export.")).body as string;
    expect(page).toContain("<code>export.leads</code>");
    expect(page).toContain("<code>export.calls</code>");
  });

  test("a download abandoned midway is on record: written before the first byte, then the rows sent so far and outcome cancelled", async () => {
    // Enough rows (1,000 a batch; 8 MB in all) that the socket's buffers fill long before the end.
    await db.sql`insert into leads (list_id, phone, first_name, address1)
      select 102, (5120000000 + i)::text, 'Bulk', repeat('x', 2000) from generate_series(1, 4000) i`;
    const before = await exportsSoFar();
    const url = new URL(app.base);
    const socket = tcpConnect(Number(url.port), url.hostname);
    // The client reads the first 100 KB (a few hundred rows), then nothing more (its buffers fill,
    // the server's writes wait), then goes away.
    const firstBytes = new Promise<string>((resolve, reject) => {
      let got = "";
      socket.on("data", (b) => {
        got += b.toString("latin1");
        if (got.length < 100_000) return;
        socket.pause();
        resolve(got);
      });
      socket.once("error", reject);
    });
    socket.write(`GET /console/leads.csv?list=102 HTTP/1.1\r\nHost: ${url.host}\r\nCookie: ${as.manager.cookie}\r\n\r\n`);
    const head = await firstBytes;
    expect(head).toStartWith("HTTP/1.1 200");
    // On record while the download is still going: the filter, no count yet.
    const [running] = await db.sql<ExportRow[]>`select details from audit_log where action = 'export.leads' order by id desc limit 1`;
    expect(await exportsSoFar()).toBe(before + 1);
    expect(running.details).toEqual({ filter: { list: 102 }, rows: null, outcome: null });
    socket.destroy();
    const row = await endedExport("export.leads");
    expect(row.details.outcome).toBe("cancelled");
    expect(row.details.rows).toBeGreaterThan(0);
    expect(row.details.rows).toBeLessThan(4000);
  });
});
