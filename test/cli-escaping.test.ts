// Text that the CLI prints and that came from outside (UTM values, webhook responses, names) reaches
// the operator's terminal with its control characters escaped, in tables and in --json alike.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { escapeControls, safeJson, textCell } from "../src/args";
import { keysCommand } from "../src/auth/command";
import { dniCommand } from "../src/dni/command";
import { DniEngine, type VisitSource } from "../src/dni/engine";
import { webhooksCommand } from "../src/events/command";
import { deliverWebhook, deliveryOptions } from "../src/events/deliver";
import { fanOut } from "../src/events/fanout";
import { parseLeadInput } from "../src/leads/model";
import { createOrDedupLead, resolveList } from "../src/leads/queries";
import { provisionCommand } from "../src/provision/command";
import { capture, spawnCli } from "./harness/capture";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, testClock } from "./harness/dni";
import { makeKey, seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Clear the screen, set the window title, CSI as one C1 character, a line separator, a bidi override.
const HOSTILE = "x\u001b[2J\u001b]0;pwned\u0007\u009b31m\u2028\u202eend";
/** Anything a terminal could act on; a table's lines end in \n, which is the only one allowed. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
});
afterAll(() => db?.drop());

describe("the one escaping helper", () => {
  test("escapes C0, DEL, C1, the line separators and bidi controls; leaves other text alone", () => {
    expect(escapeControls("a\u001b[2Jb\u007f\u0085\u009b\u2028\u2029\u202e\ttab")).toBe(
      "a\\u001b[2Jb\\u007f\\u0085\\u009b\\u2028\\u2029\\u202e\\u0009tab",
    );
    expect(escapeControls("José Ñandú 東京 — ok")).toBe("José Ñandú 東京 — ok");
  });

  test("a table cell holding any control is quoted and escaped; a plain one is left as it is", () => {
    expect(textCell(HOSTILE)).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(textCell(HOSTILE))).toBe(HOSTILE);
    expect(textCell("a\nb\tc")).toBe('"a\\nb\\tc"');
    expect(textCell("plain")).toBe("plain");
  });

  test("--json output: still the same JSON, with what JSON.stringify leaves raw (C1, U+2028/9) escaped", () => {
    expect(JSON.stringify(HOSTILE)).toMatch(RAW_CONTROL); // why the helper exists
    const out = safeJson({ v: HOSTILE, n: 1 });
    expect(out).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(out)).toEqual({ v: HOSTILE, n: 1 });
  });
});

describe("commands", () => {
  test("dni report: a lead's UTM values cannot drive the terminal", async () => {
    const clock = testClock();
    await provisionPools(db.sql, [{ numbers: ["5125550101"] }]);
    const engine = new DniEngine(db.sql, clock);
    const pool = (await engine.pools.get("acme-site"))!;
    const visit: VisitSource = {
      userAgent: "ua",
      ipHash: "h",
      attribution: () => ({
        utm_source: "\u001b[2J", utm_medium: "cpc\u009b2J", utm_campaign: HOSTILE, utm_term: "", utm_content: "",
        gclid: "", gbraid: "", wbraid: "", fbclid: "", msclkid: "", landing: "", referrer: "",
      }),
    };
    await engine.lease(pool, "mallory", visit);
    await engine.flush();
    const table = await capture(() => dniCommand(db.sql, ["report"]));
    expect(table.out).not.toMatch(RAW_CONTROL);
    expect(table.out).toContain('"\\u001b[2J"');
    expect(table.out).toContain('"cpc\\u009b2J"');
    const json = await capture(() => dniCommand(db.sql, ["report", "--json"]));
    expect(json.out).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(json.out)[0]).toMatchObject({ utm_source: "\u001b[2J", utm_medium: "cpc\u009b2J", utm_campaign: HOSTILE });
  });

  test("webhooks attempts and deliveries: a receiver's response and a lead's name are escaped", async () => {
    const rx = await WebhookReceiver.start();
    try {
      rx.respond({ status: 500, body: `oops ${HOSTILE}` });
      const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
      await db.sql`insert into webhooks (id, org_id, url, secret, events) values (9, 1, ${rx.url("/evil")}, ${secret}, '{*}')`;
      const input = parseLeadInput({ phone: "5125557001", list_id: 101, first_name: HOSTILE })!;
      await createOrDedupLead(db.sql, (await resolveList(db.sql, null, 101, null))!, input, new Date());
      const clock = { now: () => Date.now() };
      const { deliveries } = await fanOut(db.sql, clock);
      const mine = deliveries.filter((d) => d.webhook_id === 9);
      expect(mine.length).toBeGreaterThan(0);
      for (const d of mine) await deliverWebhook(db.sql, clock, { ref: d.id, attempts: 1 }, deliveryOptions(true));
      const run = (...args: string[]) => capture(() => webhooksCommand(db.sql, args, { allowPrivate: true, clock }));
      const attempts = await run("attempts", String(mine[0].id));
      expect(attempts.out).not.toMatch(RAW_CONTROL);
      expect(attempts.out).toContain("\\u001b[2J");
      const json = await run("attempts", String(mine[0].id), "--json");
      expect(json.out).not.toMatch(RAW_CONTROL);
      expect(JSON.parse(json.out)[0].response).toBe(`oops ${HOSTILE}`);
      for (const args of [["deliveries"], ["deliveries", "--json"], ["list"], ["list", "--json"]]) {
        expect((await run(...args)).out).not.toMatch(RAW_CONTROL);
      }
    } finally {
      await rx.stop();
    }
  });

  test("keys list/create and provisioning: names and agents are escaped", async () => {
    await makeKey(db.sql, { scopes: ["cti"], name: HOSTILE });
    for (const args of [["list"], ["list", "--json"]]) {
      const r = await capture(() => keysCommand(db.sql, args));
      expect(r.out).not.toMatch(RAW_CONTROL);
    }
    const dir = mkdtempSync(join(tmpdir(), "leadline-escape-"));
    const file = join(dir, "p.json");
    writeFileSync(file, JSON.stringify({
      api_keys: [
        { name: `gen ${HOSTILE}`, org_id: 1, scopes: ["cti"] },
        { key: "short-chosen-key-18", name: `short ${HOSTILE}`, org_id: 1, scopes: ["cti"] },
      ],
    }));
    const r = await capture(() => provisionCommand(db.sql, [file]));
    expect(r.out).toMatch(/^key \d+ "gen x\\u001b\[2J/);
    expect(r.err).toContain('"short x\\u001b[2J');
    expect(r.out + r.err).not.toMatch(RAW_CONTROL);
  });

  test("the executable's one-line error is escaped too (JSON.stringify in a message leaves C1 raw)", async () => {
    const r = await spawnCli(db.url, "keys", "create", "--scopes", "cti", "--agent", "ghost\u009b2J\u2028");
    expect(r.code).toBe(1);
    expect(r.err).toBe('leadline: user "ghost\\u009b2J\\u2028" does not exist\n');
  });
});
