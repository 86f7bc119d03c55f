// Test data written straight to the database (the provisioning file has its own tests).
import type { Sql } from "../../src/db/client";
import { insertKey } from "../../src/auth/admin";
import type { Scope } from "../../src/auth/keys";
import { recordSecret } from "./sweep";

export interface World {
  /** org 1 (Acme) with campaign ACME, lists 101 and 102, agent "agent7"; org 2 (Bolt) with BOLT, list 201, agent "agent9". */
  keys: Record<string, string>;
}

export async function seedWorld(sql: Sql): Promise<void> {
  await sql`insert into orgs (id, name, company) values (1, 'Acme', 'Acme Roofing LLC'), (2, 'Bolt', 'Bolt Plumbing')`;
  await sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme'), ('BOLT', 2, 'Bolt'), ('HOUSE', null, 'House')`;
  await sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web'), (102, 'ACME', 'Ads'), (201, 'BOLT', 'Web'), (900, 'HOUSE', 'Inbound')`;
  await sql`insert into users (id, org_id, name) values ('agent7', 1, 'Dana Diaz'), ('agent9', 2, 'Eli Ek'), ('house1', null, 'Hal')`;
}

export interface KeySpec {
  scopes: string[];
  org?: number | null;
  agent?: string | null;
  active?: boolean;
  revoked?: boolean;
  name?: string;
}

export async function makeKey(sql: Sql, spec: KeySpec): Promise<{ id: number; key: string }> {
  const { id, key } = await sql.begin((tx) =>
    insertKey(tx, {
      name: spec.name ?? "test",
      org_id: spec.org ?? null,
      scopes: spec.scopes as Scope[],
      agent: spec.agent ?? null,
      active: spec.active ?? true,
    }),
  );
  recordSecret("api key", key);
  if (spec.revoked) await sql`update api_keys set active = false, revoked_at = now() where id = ${id}`;
  return { id, key };
}

export const ALL_SCOPES = ["leads:read", "leads:write", "conversations:read", "messages:write", "cti", "metrics:write", "calls:write"];

export async function makeLead(
  sql: Sql,
  lead: { list?: number; phone: string; first?: string; last?: string; at?: Date },
): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, created_at)
    values (${lead.list ?? 101}, ${lead.phone}, ${lead.first ?? ""}, ${lead.last ?? ""}, ${lead.at ?? new Date()})
    returning id`;
  return row.id;
}

/**
 * Acme (org 1 of seedWorld) texting through a fake Twilio at `twilioUrl`: Chicago time, quiet hours
 * 21:00-08:00, sender 5125550100 (token `acme-token`), and 10 credits at 1 cent a text — the
 * console's workspace tests' common ground.
 */
export async function acmeTexting(sql: Sql, twilioUrl: string): Promise<void> {
  await sql`
    update orgs set timezone = 'America/Chicago', quiet_start = '21:00', quiet_end = '08:00',
      sms = ${sql.json({ base_url: twilioUrl, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })}
    where id = 1`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', 10, 0.01, 0.001)`;
}
