// The baseline server of the benchmark suites (bench/lib.ts starts it), on node_modules/.bin/bun:
//   GET /plain      (a) a bare Elysia handler returning a small JSON object
//   GET /lead?id=N  (b) a bare Elysia handler doing one indexed SELECT through postgres.js,
//                       prepared statements and a pool of POOL_MAX connections (bench/lib.ts
//                       passes the size the service's pool has)
//   POST /hooks/dni.php  the DNI suite's baseline: parses the JSON body and answers a lease-shaped
//                       JSON object with the CORS header, touching no database
// env: DATABASE_URL, PORT, HOST (default 127.0.0.1), POOL_MAX (default 8).
import { Elysia } from "elysia";
import postgres from "postgres";

const url = process.env.DATABASE_URL;
if (!url) throw new Error("DATABASE_URL is required");

const sql = postgres(url, {
  max: Number(process.env.POOL_MAX ?? 8),
  prepare: true,
  onnotice: () => {},
  types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
  connection: { application_name: "leadline-bench-baseline", TimeZone: "UTC" },
});

const dniHeaders = { "content-type": "application/json; charset=utf-8", "access-control-allow-origin": "*" };

const app = new Elysia()
  .get("/plain", () => ({ ok: true, lead: { lead_id: 42, first_name: "Ada", status: "NEW" } }))
  .get("/lead", async ({ query }) => {
    const id = Number(query.id);
    const [row] = await sql`
      select id as lead_id, first_name, last_name, phone, email, address1, city, state, postal_code, status
      from leads where id = ${id}`;
    if (!row) return new Response(JSON.stringify({ ok: false, error: "not_found" }), { status: 404 });
    return { ok: true, lead: row };
  })
  .post(
    "/hooks/dni.php",
    async ({ request }) => {
      const body = JSON.parse(await request.text());
      return new Response(
        JSON.stringify({ ok: true, number: "5125550101", formatted: "(512) 555-0101", ttl: 1800, fallback: false,
          placeholder: "5125550199", placeholder_formatted: "(512) 555-0199", v: body.visitor ? 1 : 0 }),
        { headers: dniHeaders },
      );
    },
    { parse: "none" },
  )
  .listen({ port: Number(process.env.PORT ?? 0), hostname: process.env.HOST ?? "127.0.0.1" });

console.log(JSON.stringify({ msg: "baseline listening", port: app.server?.port }));

const stop = async () => {
  await app.stop();
  await sql.end({ timeout: 2 });
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
