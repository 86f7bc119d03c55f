// The demo's living workspace: right after `serve --demo` provisions an empty database, a handful
// of leads are given the history an agent's shift starts from — web leads, texts both ways, a
// STOP, a missed call, a snoozed and a closed conversation, a callback coming due, an upcoming
// appointment — so the console opens on work to do and the tour can walk a shift (README.md).
//
// Everything goes through the services the API, the provider callbacks and the console use (the
// one send path, with the demo's sink providers; intake; the dialer's call report; booking; the
// workspace's actions), at times set back from now, so the timeline, the waiting times and the
// events are what real traffic would have made. It runs before the service listens or its workers
// start (StartOptions.prepare), so the demo's automations (the welcome text, the missed-call
// text-back) are fired and run here, each at its trigger's time, as the workers would have then;
// their jobs, when the runner meets them, find their runs done.
import { keyActor, type Actor } from "../auth/actor";
import { bookingService } from "../booking/service";
import { reportCall } from "../calls/service";
import { parseCallReport } from "../calls/model";
import type { Deps } from "../http/deps";
import { fireAutomations } from "../automations/jobs";
import { runAutomation } from "../automations/service";
import { intakeLead } from "../leads/service";
import { parseLeadInput } from "../leads/model";
import { recordInboundSms } from "../messages/callbacks";
import { sendEnv, sendMessage } from "../messages/service";
import { closeConversation, snoozeConversation } from "../workspace/actions";
import { conversationOfLead } from "../workspace/conversations";
import { scheduleCallback } from "../workspace/callbacks";
import { log, errorFields } from "../log";

const MIN = 60_000;
const ORG = 1;
const LIST = 101;
/** The demo's SMS number (deploy/demo.json), which inbound texts are sent to. */
const OUR_NUMBER = "+15125550100";

const agent: Actor = { orgId: ORG, type: "user", id: "demo-agent", agent: "demo-agent", keyId: null };
const manager: Actor = { orgId: ORG, type: "user", id: "demo-manager", agent: null, keyId: null };

interface Person {
  first: string;
  last: string;
  phone: string;
  email: string;
  city: string;
  source: string;
}

const people = {
  jose: { first: "José", last: "Núñez", phone: "5125550136", email: "jose.nunez@example.com", city: "Austin", source: "google-ads" },
  maria: { first: "Maria", last: "Garcia", phone: "5125550157", email: "maria.garcia@example.com", city: "Round Rock", source: "website" },
  tom: { first: "Tom", last: "Becker", phone: "5125550163", email: "", city: "Pflugerville", source: "facebook" },
  linda: { first: "Linda", last: "Park", phone: "5125550178", email: "linda.park@example.com", city: "Cedar Park", source: "website" },
  ken: { first: "Ken", last: "Adams", phone: "5125550184", email: "ken.adams@example.com", city: "Georgetown", source: "referral" },
  amy: { first: "Amy", last: "Liu", phone: "5125550191", email: "amy.liu@example.com", city: "Austin", source: "google-ads" },
} satisfies Record<string, Person>;

/** Seeds the demo's workspace; a failure is logged and leaves the demo as provisioned. */
export async function seedDemoWorkspace(deps: Deps): Promise<void> {
  try {
    await seed(deps, deps.clock.now());
  } catch (err) {
    log.warn("the demo's workspace could not be seeded; the demo is provisioned without it", errorFields(err));
  }
}

async function seed(deps: Deps, now: number): Promise<void> {
  const { sql } = deps;
  const env = sendEnv(deps);
  // The web form's leads come through the demo's leads key, the calls through its agent desk's.
  const keys = await sql<{ id: number; name: string; agent: string | null }[]>`
    select id::int as id, name, agent from api_keys where org_id = ${ORG} and name in ('demo leads', 'demo agent desk')`;
  const keyOf = (name: string) => keys.find((k) => k.name === name);
  const webKey = keyOf("demo leads");
  const deskKey = keyOf("demo agent desk");
  if (!webKey || !deskKey) return;
  const webForm = keyActor({ id: webKey.id, orgId: ORG, agent: null });
  const desk = keyActor({ id: deskKey.id, orgId: ORG, agent: deskKey.agent });
  const at = (minutesAgo: number) => now - minutesAgo * MIN;
  let sid = 0;

  const clockAt = (ms: number) => ({ now: () => ms });
  // What the automation workers would have done at that time: fire the triggers, run the runs.
  const automations = async (minutesAgo: number) => {
    await fireAutomations({ sql, clock: clockAt(at(minutesAgo)) });
    const runs = await sql<{ id: number }[]>`
      select id::int as id from automation_runs where status = 'pending' and due_at <= ${new Date(at(minutesAgo))} order by id`;
    for (const run of runs) await runAutomation(sql, clockAt(at(minutesAgo)), env, run.id);
  };
  const lead = async (p: Person, minutesAgo: number): Promise<number> => {
    const input = parseLeadInput({
      phone: p.phone,
      list_id: LIST,
      first_name: p.first,
      last_name: p.last,
      email: p.email,
      city: p.city,
      state: "TX",
      source: p.source,
      consent: true,
    });
    const id = (await intakeLead(sql, webForm, input, LIST, new Date(at(minutesAgo)))).lead_id;
    await automations(minutesAgo);
    return id;
  };
  const inbound = (p: Person, body: string, minutesAgo: number) =>
    recordInboundSms(
      sql,
      {
        orgId: ORG,
        cb: {
          pathAndQuery: "/hooks/sms_inbound.php",
          params: [["From", `+1${p.phone}`], ["To", OUR_NUMBER], ["Body", body], ["MessageSid", `SMdemo${String(++sid).padStart(28, "0")}`]],
          signature: null,
        },
      },
      at(minutesAgo),
    );
  const send = (who: Actor, leadId: number, channel: "sms" | "email" | "note", body: string, minutesAgo: number, subject: string | null = null) =>
    sendMessage(sql, who, { leadId, channel, body, subject, operationId: `demo-${leadId}-${minutesAgo}-${channel}` }, at(minutesAgo), env);
  const call = async (p: Person, secs: number, minutesAgo: number) => {
    const report = parseCallReport({ phone: p.phone, status: secs > 0 ? "ANSWERED" : "NO ANSWER", secs, agent: "demo-agent" }, at(minutesAgo));
    await reportCall(sql, desk, report, new Date(at(minutesAgo)));
    await automations(minutesAgo);
  };
  const conversation = async (leadId: number) => (await conversationOfLead(sql, manager, leadId))!;

  // Amy: handled yesterday and closed.
  const amy = await lead(people.amy, 26 * 60);
  await send(agent, amy, "sms", "Hi Amy, this is Dana at Demo Roofing: your gutter repair is done. Anything else we can help with?", 25 * 60);
  await inbound(people.amy, "All set, thanks so much!", 24 * 60);
  await closeConversation(sql, agent, (await conversation(amy)).id, at(24 * 60 - 5));

  // Ken: wants a quote after the holidays; snoozed until tomorrow morning.
  const ken = await lead(people.ken, 5 * 60);
  await send(agent, ken, "sms", "Hi Ken, thanks for the referral request! When would suit you for a free roof inspection?", 4 * 60 + 50);
  await inbound(people.ken, "Next week is better, can you text me tomorrow?", 4 * 60);
  await snoozeConversation(sql, agent, (await conversation(ken)).id, { preset: "tomorrow" }, at(3 * 60 + 55));

  // Tom: opted out by text.
  const tom = await lead(people.tom, 3 * 60);
  await send(agent, tom, "sms", "Hi Tom, Dana from Demo Roofing here about your storm damage question.", 2 * 60 + 50);
  await inbound(people.tom, "STOP", 2 * 60 + 40);

  // Maria: a conversation going well, an estimate booked for tomorrow, a callback coming due.
  const maria = await lead(people.maria, 2 * 60);
  await send(agent, maria, "sms", "Hi Maria, this is Dana at Demo Roofing. I can send someone to look at the leak this week, would Thursday work?", 110);
  await inbound(people.maria, "Thursday works. Morning if possible", 95);
  await send(agent, maria, "note", "Leak over the garage, insurance claim likely. Wants mornings.", 90);
  await book(deps, people.maria, now);
  await scheduleCallback(sql, manager, { leadId: maria, at: at(2), note: "Confirm the insurance adjuster's visit", assignee: "demo-agent" }, at(60));

  // Linda: called while nobody could answer (the missed-call text-back automation answers her).
  await lead(people.linda, 70);
  await call(people.linda, 0, 45);

  // José: a new web lead who has just asked a question nobody has answered yet.
  await lead(people.jose, 40);
  await inbound(people.jose, "Hola, can someone come look at my roof this week? Some shingles blew off.", 12);
}

/** An estimate for the person tomorrow morning (the first open slot from 10:00 in the calendar's zone), else the first open slot. */
async function book(deps: Deps, p: Person, now: number): Promise<void> {
  const svc = bookingService(deps.sql, deps.clock, { baseUrl: deps.config.baseUrl, inboundListId: LIST });
  const answer = await svc.slots({ slug: "demo" });
  if (!answer.ok || answer.slots.length === 0) return;
  const local = (ms: number) => {
    const parts = new Intl.DateTimeFormat("en-CA", { timeZone: answer.tz, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", hourCycle: "h23" }).formatToParts(ms);
    const part = (type: string) => parts.find((x) => x.type === type)?.value ?? "";
    return { day: `${part("year")}-${part("month")}-${part("day")}`, hour: Number(part("hour")) };
  };
  const today = local(now).day;
  const slot = answer.slots.find((s) => local(s.epoch * 1000).day > today && local(s.epoch * 1000).hour >= 10) ?? answer.slots[0]!;
  await svc.book({ slug: "demo", epoch: slot.epoch, name: `${p.first} ${p.last}`, phone: p.phone, email: p.email });
}
