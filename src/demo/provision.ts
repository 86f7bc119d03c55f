// `leadline serve --demo`: on a database without any organization, the demo (deploy/demo.json,
// bundled into the executable) is provisioned before the server listens, and a banner says once
// which keys it made and what to open. Its providers are all `sink:` (src/sink.ts), so nothing it
// does leaves the machine. On a database with data it does nothing: a real installation's rows
// are never mixed with the demo's, and the demo's public keys never reach one.
import demoFile from "../../deploy/demo.json";
import type { Sql } from "../db/client";
import { applyProvisioning } from "../provision/service";
import { parseProvisioning } from "../provision/validate";

/** The demo's DNI pool: /demo/dni (routes.ts) exists only where a pool of this key does. */
export const DEMO_POOL = "leadline-demo";

export type DemoOutcome =
  | { applied: false }
  | { applied: true; keys: { key: string; scopes: string[]; agent: string | null }[]; slug: string; users: { email: string; role: string; password: string }[] };

/**
 * The demo's console users sign in with public passwords, like its public keys: the demo listens
 * on loopback and is never a real installation (a database with data never gets it).
 */
export const DEMO_PASSWORD = "leadline-demo-pass";

/**
 * DEMO_PASSWORD's Argon2id hash at ARGON2_COST (src/auth/passwords.ts), made once (test/demo-password.test.ts checks it
 * against both): hashing a published password at every first start protects nothing, and took a
 * quarter of a second and 64 MiB of the demo's first start (bench/first-start.ts). A sign-in still
 * verifies it at the full cost.
 */
export const DEMO_PASSWORD_HASH = "$argon2id$v=19$m=65536,t=2,p=1$lDCvWIIACerDtzEx+ytYX9j8Fg8tXz5QcnlgtEzrgmo$gjIYYNVFAt5FWeHmxGM69q+WZeGKJr8+WmxWDtbzG94";

/** Provisions the demo when no organization exists; the same validation as `leadline provision`. */
export async function provisionDemo(sql: Sql, now: Date, secretKey: Buffer | null): Promise<DemoOutcome> {
  const file = parseProvisioning(JSON.stringify(demoFile));
  // Two `serve --demo` started at once on an empty database may both find it empty: provisioning
  // is an idempotent upsert under its own lock, so the second applies the same rows again.
  const [{ empty }] = await sql<{ empty: boolean }[]>`select not exists (select 1 from orgs) as empty`;
  if (!empty) return { applied: false };
  await applyProvisioning(sql, file, { now, secretKey });
  const users = (file.users ?? []).filter((u) => u.email && u.role).map((u) => ({ email: u.email!, role: u.role!, password: DEMO_PASSWORD }));
  await sql`update users set password_hash = ${DEMO_PASSWORD_HASH}, password_changed_at = ${now} where email in ${sql(users.map((u) => u.email))} and password_hash is null`;
  return {
    applied: true,
    users,
    keys: (file.api_keys ?? []).map((k) => ({ key: k.key!, scopes: k.scopes ?? [], agent: k.agent ?? null })),
    slug: file.calendars![0].links![0].slug,
  };
}

/** The one-time text for a person at a terminal (not a log line). */
export function demoBanner(demo: DemoOutcome, baseUrl: string): string {
  if (!demo.applied) return "demo not applied: the database is not empty (serve --demo provisions only an empty one)\n";
  const width = Math.max(...demo.keys.map((k) => k.key.length));
  const keys = demo.keys.map((k) => `  ${k.key.padEnd(width)}  ${k.scopes.join(" ")}${k.agent ? ` (agent ${k.agent})` : ""}`);
  return [
    "",
    "Leadline demo provisioned (deploy/demo.json). Its SMS, email and webhooks go to sinks inside",
    "this process: they are recorded (conversation timeline, leadline webhooks deliveries), never sent.",
    "",
    "API keys (header X-Api-Key) — public demo keys, for this machine only:",
    ...keys,
    "",
    "Console users (sign in at the console) — public demo passwords, for this machine only:",
    ...demo.users.map((u) => `  ${u.email.padEnd(22)}  ${u.password}  (${u.role})`),
    "",
    "Open:",
    `  console        ${baseUrl}/console/`,
    `  booking page   ${baseUrl}/book/${demo.slug}`,
    `  DNI test page  ${baseUrl}/demo/dni`,
    `  API docs       ${baseUrl}/docs`,
    "",
    "The five-minute tour starts in README.md (\"Five-minute tour\"), its curl lines in docs/tour.md.",
    "",
  ].join("\n") + "\n";
}
