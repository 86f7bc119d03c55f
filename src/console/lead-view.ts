// The lead page's body (the layout gives its <h1>, the lead's name), as pure functions of its data (no database, no request): the fields, the
// composer, the timeline (whose entries the polling route renders with the same function), the
// do-not-contact list, consent, appointments, the DNI first touch and the dial form (with the lead's
// local time).
import { CONSENT_REASON_MAX, type ChannelConsent } from "../leads/consent";
import type { LeadProfile } from "../leads/profile";
import type { LeadAppointment } from "../booking/by-lead";
import type { KeyedEntry } from "../conversations/timeline";
import type { LocalTime } from "../cti/calling-window";
import type { FirstTouch } from "../dni/attribution";
import { DNC_NOTE_MAX, type DncEntry, type DncStatus } from "../leads/dnc";
import { formatNumber } from "../dni/rules";
import { htmlToText } from "../messages/merge";
import { actorWords, eventActorWords, type ActorNames } from "./actor-names";
import { composerHtml, type ComposerState } from "./composer";
import { html, when, type Html } from "./html";

export interface LeadPage {
  lead: LeadProfile;
  entries: KeyedEntry[];
  /** The polling mark (src/conversations/timeline.ts markText); null on an older page, which does not poll. */
  mark: string | null;
  /** The cursor of the next older entries (the oldest shown), when there are some. */
  older: string | null;
  consent: ChannelConsent[];
  appointments: LeadAppointment[];
  firstTouch: FirstTouch | null;
  /** Who a dial can be queued for; one entry (the viewer) for an agent. */
  agents: { id: string; name: string }[];
  /** What the composer shows: its channels, quiet hours, cost, and a refused send's draft (composer.ts). */
  composer: Omit<ComposerState, "action" | "csrf" | "extra">;
  /** Actors' names for the timeline's entries. */
  names: ActorNames;
  csrf: Html;
  /** The one-line result of the last post, if any. */
  notice: Html | null;
  /** A manager or an admin: may change an opted-out channel, with a reason. */
  mayLiftOptOut: boolean;
  /** The lead's phone and email on its organization's do-not-contact list. */
  dnc: DncStatus;
  /** The lead's local time now, and whether it is outside its calling window (src/cti/calling-window.ts). */
  callTime: LocalTime;
  /** Callbacks and booking on the lead's behalf (lead-actions-view.ts). */
  actions?: Html | null;
}

export const leadDisplayName = (l: { first_name: string; last_name: string; phone: string }) =>
  `${l.first_name} ${l.last_name}`.trim() || formatNumber(l.phone);

const mins = (secs: number) => `${Math.floor(secs / 60)}m ${String(secs % 60).padStart(2, "0")}s`;

/**
 * An entry's place: its key (the merged order, which the inbox's live refresh sorts by) and, for a
 * call or an event, a stable id like a message's `msg-<id>` (the refresh updates an entry in place
 * and never adds one twice by these ids).
 */
function placeOf(e: KeyedEntry): Html | null {
  if (e.key === undefined) return null;
  const sid = e.key.split(".")[2];
  return e.kind === "msg" ? html` data-key="${e.key}"` : html` id="${e.kind}-${sid}" data-key="${e.key}"`;
}

/** One timeline entry as a list item; every value is text (message bodies are untrusted). */
export function entryHtml(e: KeyedEntry, zone: string, names: ActorNames = new Map()): Html {
  const place = placeOf(e);
  const at = html`<time datetime="${new Date(e.epoch * 1000).toISOString()}">${when(e.epoch * 1000, zone)}</time>`;
  switch (e.kind) {
    case "msg": {
      const inbound = e.direction === "in";
      const who = inbound ? "from the lead" : `by ${actorWords(e.actor_type, e.actor_id, names)}`;
      if (e.channel === "note") {
        // A note is the team's, never the lead's: it reads as a note, not as a text that went out.
        return html`<li id="msg-${e.id}"${place} class="tl tl-note">
        <div class="tl-head"><span class="badge badge-note">NOTE</span> <span class="muted">${who}</span> ${at}</div>
        <div class="tl-body">${e.body}</div>
      </li>`;
      }
      const text = e.channel === "email" ? htmlToText(e.body) : e.body;
      const bad = ["failed", "undelivered", "unknown"].includes(e.status);
      return html`<li id="msg-${e.id}"${place} class="tl tl-msg ${inbound ? "tl-in" : "tl-out"}">
        <div class="tl-head"><span class="badge">${e.channel.toUpperCase()}</span> <strong>${inbound ? "In" : "Out"}</strong>
          <span class="muted">${who}</span> ${at}
          ${e.status ? html`<span class="badge ${bad ? "badge-bad" : e.status === "queued" ? "badge-warn" : "badge-ok"}">${e.status}</span>` : null}</div>
        ${e.subject && e.channel === "email" ? html`<div class="tl-subject">${e.subject}</div>` : null}
        <div class="tl-body">${text}</div>
        ${e.error ? html`<div class="tl-error">${e.error}</div>` : null}
      </li>`;
    }
    case "call":
      return html`<li${place} class="tl tl-call">
        <div class="tl-head"><span class="badge">CALL</span> <strong>${e.status || "call"}</strong> ${at}</div>
        <div class="tl-body">${mins(e.secs)}${e.agent ? html` · agent ${names.get(`user:${e.agent}`) ?? e.agent}` : null}</div>
        ${e.ai_summary ? html`<div class="tl-body muted">${e.ai_summary}</div>` : null}
      </li>`;
    case "event":
      return html`<li${place} class="tl tl-event">
        <div class="tl-head"><span class="badge">EVENT</span> <strong>${e.label || e.event}</strong> ${at}</div>
        ${e.actor ? html`<div class="muted">by ${eventActorWords(e.actor, e.actor_role, names)}</div>` : null}
        ${e.note ? html`<div class="tl-body">${e.note}</div>` : null}
      </li>`;
  }
}

/**
 * The link above a timeline to its older entries (`cursor`: the oldest entry shown), or the
 * words that say the conversation starts there. `href`: the page without JavaScript.
 */
export function olderLink(leadId: number, cursor: string | null, href: string | null, oob = false): Html {
  const swap = oob ? html` hx-swap-oob="true"` : null;
  if (cursor === null || href === null) return html`<p class="tl-older tl-start muted" id="tl-older"${swap}>The start of the conversation.</p>`;
  return html`<p class="tl-older" id="tl-older"${swap}><a hx-get="/console/leads/${leadId}/timeline/older?before=${cursor}"
    hx-trigger="click, intersect once" hx-target="next .timeline" hx-swap="afterbegin show:none" hx-sync="this:drop" href="${href}">Show older entries</a></p>`;
}

/** The older page of the lead page: what a link carries when JavaScript is off. */
export const olderPageHref = (leadId: number, cursor: string) => `/console/leads/${leadId}?before=${cursor}#h-timeline`;

export const entriesHtml = (entries: KeyedEntry[], zone: string, names: ActorNames = new Map()): Html =>
  html`${entries.map((e) => entryHtml(e, zone, names))}`;

function fields(l: LeadProfile): Html {
  const row = (k: string, v: Html | string) => html`<dt>${k}</dt><dd>${v === "" ? html`<span class="muted">—</span>` : v}</dd>`;
  const address = [l.address1, l.city, [l.state, l.postal_code].filter(Boolean).join(" ")].filter(Boolean).join(", ");
  return html`<section class="card" aria-labelledby="h-fields"><h2 id="h-fields">Lead</h2><dl class="fields">
    ${row("Phone", formatNumber(l.phone))}
    ${row("Email", l.email)}
    ${row("Status", l.status)}
    ${row("Address", address)}
    ${row("Campaign", l.campaign_name ? `${l.campaign_name} (${l.campaign_id})` : l.campaign_id)}
    ${row("List", l.list_name ? `${l.list_name} (${l.list_id})` : String(l.list_id))}
    ${l.org_name ? row("Organization", l.org_name) : null}
    ${row("Source", l.source)}
    ${row("Created", when(l.created_at, l.timezone))}
    ${row("Lead id", String(l.id))}
  </dl><p><a href="/console/leads/${l.id}/edit">Edit the lead, its status and tags</a></p></section>`;
}


function timeline(p: LeadPage): Html {
  const live = p.mark !== null;
  return html`<section class="card" aria-labelledby="h-timeline"><h2 id="h-timeline">Timeline</h2>
    <p class="muted">${live
      ? "Messages, calls and events, oldest first, the newest at the bottom; new ones appear there as they arrive."
      : html`Older messages, calls and events, oldest first. <a href="/console/leads/${p.lead.id}#h-timeline">Back to the newest</a>`}</p>
    ${p.entries.length > 0 ? olderLink(p.lead.id, p.older, p.older === null ? null : olderPageHref(p.lead.id, p.older)) : null}
    ${live
      ? html`<ol id="timeline" class="timeline" aria-live="polite" data-mark="${p.mark}" data-src="/console/api/leads/${p.lead.id}/timeline">
      ${entriesHtml(p.entries, p.lead.timezone, p.names)}
    </ol>`
      : html`<ol class="timeline">${entriesHtml(p.entries, p.lead.timezone, p.names)}</ol>`}
    ${p.entries.length === 0 ? html`<p class="empty" id="timeline-empty">Nothing yet.</p>` : null}
  </section>`;
}

const CONSENT_WORDS: Record<string, string> = { in: "Opted in", out: "Opted out", none: "No consent recorded" };

function consent(p: LeadPage): Html {
  return html`<section class="card" aria-labelledby="h-consent"><h2 id="h-consent">Consent</h2>
    ${p.consent.map((c) => {
      const label = c.channel === "sms" ? "SMS" : "Email";
      const id = `consent-${c.channel}`;
      return html`<form method="post" action="/console/leads/${p.lead.id}/consent" class="consent-row">
        ${p.csrf}
        <input type="hidden" name="channel" value="${c.channel}">
        <div><strong>${label}</strong> <span class="badge ${c.consent === "in" ? "badge-ok" : c.consent === "out" ? "badge-bad" : "badge-warn"}">${CONSENT_WORDS[c.consent]}</span>
          <div class="muted">${c.address === "" ? "no address" : c.channel === "sms" ? formatNumber(c.address) : c.address}${
            c.consent_at ? html` · set ${when(c.consent_at, p.lead.timezone)}${c.consent_source ? html` (${c.consent_source})` : null}` : null
          }</div></div>
        ${c.address === ""
          ? null
          : c.consent === "out" && !p.mayLiftOptOut
            ? html`<p class="muted">Only a manager can record a new consent after an opt-out.</p>`
            : html`<label for="${id}">Change ${label} consent to</label>
            <select id="${id}" name="consent">
              ${(["in", "out", "none"] as const).map((v) => html`<option value="${v}"${v === c.consent ? html` selected` : null}>${CONSENT_WORDS[v]}</option>`)}
            </select>
            ${c.consent === "out"
              ? html`<label for="${id}-reason">Reason (the lead opted out; required)</label>
            <input id="${id}-reason" name="reason" type="text" maxlength="${CONSENT_REASON_MAX}" required autocomplete="off">`
              : null}
            <button type="submit" class="btn">Change</button>`}
      </form>`;
    })}
  </section>`;
}

function appointments(p: LeadPage): Html {
  return html`<section class="card" aria-labelledby="h-appts"><h2 id="h-appts">Appointments</h2>
    ${p.appointments.length === 0
      ? html`<p class="empty">None.</p>`
      : html`<ul class="plain">${p.appointments.map(
          (a) => html`<li><strong>${when(a.slot_epoch * 1000, a.timezone)}</strong> <span class="muted">(${a.timezone})</span> · ${a.calendar}
            <span class="badge ${a.status === "cancelled" || a.status === "no_show" ? "badge-bad" : a.status === "pending" ? "badge-warn" : "badge-ok"}">${a.status}</span></li>`,
        )}</ul>`}
  </section>`;
}

/** The lead's first touch, as its events carry it (`attribution`): click ids only when the visit had them. */
function firstTouch(p: LeadPage): Html {
  const t = p.firstTouch;
  const row = (k: string, v: string | null) => html`<dt>${k}</dt><dd>${v ? v : html`<span class="muted">—</span>`}</dd>`;
  const clicks = t === null ? [] : (["gbraid", "wbraid", "fbclid", "msclkid"] as const).filter((k) => t[k]);
  return html`<section class="card" aria-labelledby="h-touch"><h2 id="h-touch">First touch</h2>
    ${t === null
      ? html`<p class="empty">No tracked visit behind this lead yet.</p>`
      : html`<dl class="fields">
          ${row("Source", t.source)}${row("Medium", t.medium)}${row("Campaign", t.campaign)}${row("Term", t.term)}${row("Content", t.content)}
          <dt>Landing page</dt><dd class="wrap">${t.landing || html`<span class="muted">—</span>`}</dd>
          ${row("gclid", t.gclid)}${clicks.map((k) => row(k, t[k]))}${row("Referrer", t.referrer)}${row("Pool", t.pool)}
          ${row("First visit", t.first_seen_at ? when(new Date(t.first_seen_at), p.lead.timezone) : null)}
        </dl>`}
  </section>`;
}

/** The lead's local time beside Queue dial; outside its calling window the form asks for a confirmation. */
function localTime(p: LeadPage): Html {
  const t = p.callTime;
  const window = `${t.window.start}–${t.window.end}`;
  if (t.zone === null) return html`<p class="muted" id="lead-local-time">Local time unknown (no state, and the area code names no zone).</p>`;
  return html`<p id="lead-local-time">Lead's local time: <strong>${when(Date.parse(t.localTime!), t.zone)}</strong> <span class="muted">(${t.zone})</span>
    ${t.outsideWindow
      ? html` <span class="badge badge-bad">Outside calling hours</span> <span class="muted">(${window} there)</span>`
      : html` <span class="badge badge-ok">Within calling hours</span> <span class="muted">(${window})</span>`}</p>`;
}

/** `tel:` and `mailto:` links, for a call or an email from the agent's own phone or mail program. */
export function contactLinks(l: { phone: string; email: string }): Html {
  const digits = l.phone.replace(/\D/g, "");
  const tel = digits.length === 10 ? `+1${digits}` : digits.length > 10 ? `+${digits}` : null;
  return html`<p class="contact-links">${tel ? html`<a href="tel:${tel}">Call ${formatNumber(l.phone)}</a>` : null}${
    tel && l.email ? " · " : ""
  }${l.email ? html`<a href="mailto:${l.email}">Email ${l.email}</a>` : null}</p>`;
}

function dial(p: LeadPage, selfOnly: boolean): Html {
  const outside = p.callTime.outsideWindow;
  return html`<section class="card" aria-labelledby="h-dial"><h2 id="h-dial">Dial</h2>
    ${localTime(p)}
    ${contactLinks(p.lead)}
    ${p.dnc.phone ? html`<p><span class="badge badge-bad">Do not contact</span> This phone is on the do-not-contact list: a dial is queued marked for the dialer to skip.</p>` : null}
    ${p.agents.length === 0
      ? html`<p class="empty">No agent in this organization.</p>`
      : html`<form method="post" action="/console/leads/${p.lead.id}/dial" class="dial-row">
          ${p.csrf}
          ${selfOnly
            ? html`<input type="hidden" name="agent" value="${p.agents[0].id}"><p>Queue a call to ${formatNumber(p.lead.phone)} on your phone.</p>`
            : html`<label for="agent">Agent</label>
              <select id="agent" name="agent">${p.agents.map((a) => html`<option value="${a.id}">${a.name || a.id}</option>`)}</select>`}
          ${outside
            ? html`<label class="confirm"><input type="checkbox" name="confirm_outside" value="yes" required> Call outside the lead's calling hours (${p.callTime.window.start}–${p.callTime.window.end} local)</label>`
            : null}
          <button type="submit" class="btn">Queue dial</button>
        </form>`}
  </section>`;
}

const DNC_KIND_WORDS = { phone: "Phone", email: "Email" } as const;

/** The lead's addresses on its organization's do-not-contact list, and a form to put the others on it. */
function doNotContact(p: LeadPage): Html {
  const rows = (["phone", "email"] as const).map((kind) => ({ kind, entry: p.dnc[kind] as DncEntry | null, address: kind === "phone" ? p.lead.phone : p.lead.email }));
  const listed = rows.filter((r) => r.entry !== null);
  const addable = rows.filter((r) => r.entry === null && r.address !== "");
  return html`<section class="card" aria-labelledby="h-dnc"><h2 id="h-dnc">Do not contact</h2>
    ${listed.length === 0
      ? html`<p class="muted" id="dnc-status">Not on the organization's do-not-contact list.</p>`
      : html`<ul class="plain" id="dnc-status">${listed.map(
          (r) => html`<li><span class="badge badge-bad">Do not contact</span> <strong>${DNC_KIND_WORDS[r.kind]}</strong> ${r.kind === "phone" ? formatNumber(r.entry!.address) : r.entry!.address}
            <div class="muted">since ${when(r.entry!.added_at, p.lead.timezone)} (${r.entry!.source})${r.entry!.note ? html` · ${r.entry!.note}` : null}</div></li>`,
        )}</ul>`}
    ${addable.length === 0
      ? null
      : html`<form method="post" action="/console/leads/${p.lead.id}/dnc" class="dial-row">
          ${p.csrf}
          <label for="dnc-kind">Add to the list</label>
          <select id="dnc-kind" name="kind">${addable.map((r) => html`<option value="${r.kind}">${DNC_KIND_WORDS[r.kind]} ${r.kind === "phone" ? formatNumber(r.address) : r.address}</option>`)}</select>
          <label for="dnc-note">Note</label>
          <input id="dnc-note" name="note" type="text" maxlength="${DNC_NOTE_MAX}" autocomplete="off">
          <button type="submit" class="btn">Add</button>
        </form>`}
  </section>`;
}

export function leadBody(p: LeadPage, selfOnlyDial: boolean): Html {
  // The lead is a conversation: the timeline oldest to newest and the composer docked under the
  // newest entry (an older page has no composer: it leads back to the newest).
  return html`<p><a href="/console/leads">← Leads</a></p>
  ${p.notice}
  <div class="lead-grid">
    <div class="lead-main">${timeline(p)}${p.mark === null ? null : html`<section class="card">${composerHtml({ ...p.composer, action: `/console/leads/${p.lead.id}/send`, csrf: p.csrf })}</section>`}</div>
    <div class="lead-side">${fields(p.lead)}${p.actions ?? null}${doNotContact(p)}${consent(p)}${dial(p, selfOnlyDial)}${appointments(p)}${firstTouch(p)}</div>
  </div>`;
}
