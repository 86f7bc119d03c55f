// /console/appointments: the list (every role, confined to the viewer's organization) and the
// status actions (a form post → 303 back to the list with a notice).
import { Type as t } from "@sinclair/typebox";
import { APPOINTMENT_STATUSES, isStatusAction, type AppointmentStatus } from "../../booking/states";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { instantOf, isZone } from "../../zone";
import { today } from "../period";
import { consoleHtml, csrfField, notFoundPage, seeOther } from "../html";
import { formBody, pageQuery, pageSpec } from "../route";
import { appointmentsBody, DONE_TEXT, ERROR_TEXT, type FilterForm } from "./page";
import { viewerZone } from "../viewer-zone";
import { calendarsOf, listAppointments } from "./queries";
import { changeStatus } from "./service";

export const PAGE_SIZE = 50;
const PATH = "/console/appointments";
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const ID = /^[0-9]{1,15}$/;

const StatusForm = t.Object({
  action: t.Optional(t.String({ description: "confirm, cancel, complete or no_show" })),
  back: t.Optional(t.String({ description: "the list's address to come back to" })),
});

const ListQuery = t.Object(
  {
    calendar: t.Optional(t.String({ description: "a calendar's id; empty: all" })),
    from: t.Optional(t.String({ description: "YYYY-MM-DD, the first day (in the organization's zone); absent: today, empty: no bound" })),
    to: t.Optional(t.String({ description: "YYYY-MM-DD, the last day included" })),
    status: t.Optional(t.String({ description: `one of ${APPOINTMENT_STATUSES.join(", ")}; empty: any` })),
    after: t.Optional(t.String({ description: "the keyset cursor of the next page" })),
    done: t.Optional(t.String()),
    error: t.Optional(t.String()),
  },
  { additionalProperties: true },
);

/** The instant a day (YYYY-MM-DD) starts in `zone`, Unix seconds; null for anything else. */
const STYLES = ["operations.css"];

export function dayStart(day: string, zone: string, plusDays = 0): number | null {
  const m = DAY.exec(day);
  if (!m) return null;
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3] + plusDays);
  if (!Number.isFinite(wall) || new Date(wall).getUTCFullYear() < 1970) return null;
  return Math.floor(instantOf(wall, isZone(zone) ? zone : "UTC") / 1000);
}

const todayIn = (zone: string, now: number) => today(now, isZone(zone) ? zone : "UTC");

/** An address inside the appointments page to come back to, with the notice; anything else is the page itself. */
export function backTo(back: string | undefined, notice: Record<string, string>): string {
  const origin = "http://console.invalid";
  let url = new URL(back && back.startsWith(PATH) ? back : PATH, origin);
  if (url.origin !== origin || url.pathname !== PATH) url = new URL(PATH, origin);
  url.searchParams.delete("done");
  url.searchParams.delete("error");
  for (const [k, v] of Object.entries(notice)) url.searchParams.set(k, v);
  return url.pathname + url.search;
}

export function appointmentRoutes(deps: Deps): Route[] {
  const list = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleAppointments",
      summary: "Appointments: by calendar, start dates and status, with the actions open to each",
      method: "GET",
      path: PATH,
      query: pageQuery(ListQuery),
    }),
    async ({ query: q }, { grant: viewer }) => {
      const orgId = viewer.actor.orgId;
      const zone = await viewerZone(deps.sql, orgId);
      const now = deps.clock.now();
      const form: FilterForm = {
        calendar: ID.test(q.calendar ?? "") ? q.calendar! : "",
        from: q.from === undefined ? todayIn(zone, now) : DAY.test(q.from) ? q.from : "",
        to: DAY.test(q.to ?? "") ? q.to! : "",
        status: (APPOINTMENT_STATUSES as readonly string[]).includes(q.status ?? "") ? q.status! : "",
      };
      const cursor = /^([0-9]{1,15})\.([0-9]{1,15})$/.exec(q.after ?? "");
      const [rows, calendars] = await Promise.all([
        listAppointments(deps.sql, {
          orgId,
          calendar: form.calendar ? Number(form.calendar) : null,
          from: form.from ? dayStart(form.from, zone) : null,
          to: form.to ? dayStart(form.to, zone, 1) : null,
          status: (form.status || null) as AppointmentStatus | null,
          after: cursor ? { epoch: Number(cursor[1]), id: Number(cursor[2]) } : null,
          limit: PAGE_SIZE,
        }),
        calendarsOf(deps.sql, orgId),
      ]);
      const items = rows.slice(0, PAGE_SIZE);
      const params = new URLSearchParams({ ...form });
      const here = `${PATH}?${params}`;
      const last = items[items.length - 1];
      if (rows.length > PAGE_SIZE) params.set("after", `${last.slot_epoch}.${last.id}`);
      const done = q.done !== undefined && isStatusAction(q.done) ? DONE_TEXT[q.done] : null;
      const error = q.error !== undefined && q.error in ERROR_TEXT ? ERROR_TEXT[q.error as keyof typeof ERROR_TEXT] : null;
      const body = appointmentsBody({
        items,
        calendars,
        form,
        zoneNote: `in ${zone}`,
        next: rows.length > PAGE_SIZE ? `${PATH}?${params}` : null,
        back: q.after ? `${here}&after=${encodeURIComponent(q.after)}` : here,
        now,
        csrf: csrfField(viewer),
        done,
        error,
      });
      return consoleHtml(deps, viewer, { title: "Appointments", nav: "appointments", body, styles: STYLES });
    },
  );

  const status = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleAppointmentStatus",
      summary: "Confirm, cancel, or mark an appointment completed or no-show (form: action, back)",
      description:
        "Each change writes the appointment's status, its conversation event, its outbound event (appointment.confirmed, " +
        "appointment.cancelled, appointment.completed, appointment.no_show) and an audit row in one transaction; a cancellation frees the seat.",
      method: "POST",
      path: `${PATH}/{id}/status`,
      params: idParam,
      body: formBody(StatusForm),
    }),
    async ({ params: id, body: form }, { grant: viewer }) => {
      if (!isStatusAction(form.action ?? "")) return notFoundPage(deps, viewer);
      const r = await changeStatus(deps.sql, deps.clock, viewer.actor, id, form.action as Parameters<typeof changeStatus>[4]);
      if (!r.ok && r.reason === "not_found") return notFoundPage(deps, viewer);
      return seeOther(backTo(form.back, r.ok ? { done: form.action! } : { error: r.reason }));
    },
  );

  return [list, status];
}
