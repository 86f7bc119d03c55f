// The leads, messages and notes the workspace search tests look for (test/workspace-search*.ts),
// written straight to the database after seedWorld: the same world on PostgreSQL and on PGlite.
import type { Sql } from "../../src/db/client";

export interface SearchWorld {
  joseNunez: number;
  josePerez: number;
  zoe: number;
  boltJose: number;
  zoeLeakNote: number;
  /** Org 1's leads with a message saying hello. */
  helloLeads: number;
}

export async function seedSearchWorld(sql: Sql): Promise<SearchWorld> {
  const lead = async (list: number, first: string, last: string, phone: string, email = "", minutesAgo = 0) => {
    const [row] = await sql<{ id: number }[]>`
      insert into leads (list_id, phone, first_name, last_name, email, created_at)
      values (${list}, ${phone}, ${first}, ${last}, ${email}, timestamptz '2026-11-01' - ${minutesAgo} * interval '1 minute') returning id`;
    return row.id;
  };
  const message = async (leadId: number, org: number, channel: string, body: string, subject = "", direction = "out") => {
    const [row] = await sql<{ id: number }[]>`
      insert into messages (lead_id, org_id, channel, direction, subject, body, status)
      values (${leadId}, ${org}, ${channel}, ${direction}, ${subject}, ${body}, 'sent') returning id`;
    return row.id;
  };
  const joseNunez = await lead(101, "José", "Núñez", "5125550199", "", 10);
  const josePerez = await lead(101, "JOSE", "Perez", "5125550123", "jp@example.com", 20);
  const zoe = await lead(102, "Zoë", "Ångström", "7135550100", "ana.rivera@acme-mail.example", 30);
  const boltJose = await lead(201, "José", "Bolt", "2145550199", "ana.rivera@bolt.example", 5);
  await message(josePerez, 1, "sms", "Hola señor Perez, about the roof leak you reported last week: our crew can come Tuesday.", "", "out");
  await message(josePerez, 1, "email", "<p>Hi <b>José</b>, the warranty covers 10 years.</p>", "Your quote");
  await message(zoe, 1, "sms", "Thanks Jose from Acme!", "", "in");
  const zoeLeakNote = await message(zoe, 1, "note", "Called back: the ROOF is leaking over the kitchen again, wants an estimate Friday.");
  await message(boltJose, 2, "sms", "Your plumbing appointment is confirmed.", "", "out");
  // Leads that each said hello, to count the limit against.
  let helloLeads = 0;
  for (let i = 0; i < 6; i++) {
    const id = await lead(101, `Hello${i}`, "Caller", `51255510${String(i).padStart(2, "0")}`, "", 100 + i);
    await message(id, 1, "sms", "hello there", "", "in");
    await message(id, 1, "sms", "hello again", "", "in");
    helloLeads++;
  }
  return { joseNunez, josePerez, zoe, boltJose, zoeLeakNote, helloLeads };
}
