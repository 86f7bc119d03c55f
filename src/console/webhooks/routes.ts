// /console/webhooks: endpoints, one endpoint's deliveries and attempts, replay and re-enable.
// Managers (their organization's endpoints) and admins (all, the house's included).
import { Type as t } from "@sinclair/typebox";
import { listAttempts, listDeliveries, listEndpoints } from "../../events/admin";
import type { Deps } from "../../http/deps";
import type { Route } from "../../http/route";
import { viewerZone } from "../viewer-zone";
import { consoleHtml, csrfField, notFoundPage, seeOther } from "../html";
import { consolePage, formOf } from "../route";
import type { Role } from "../users";
import { endpointBody, endpointsBody, type Flash } from "./page";
import { enable, replay } from "./service";

const ROLES: Role[] = ["manager", "admin"];
const ID = /^[0-9]{1,15}$/;
export const DELIVERY_LIMIT = 100;

const DONE: Record<string, string> = {
  enabled: "Endpoint re-enabled: new events are delivered to it again (failed deliveries stay failed until replayed).",
  replayed: "Delivery replayed: its newest attempt below shows the answer.",
};
const ERRORS: Record<string, string> = {
  closed: "The endpoint is disabled or inactive: re-enable it before replaying.",
};

const flashOf = (q: Record<string, string | undefined>): Flash => ({
  done: (q.done && DONE[q.done]) || null,
  error: (q.error && ERRORS[q.error]) || null,
});

const FlashQuery = { done: t.Optional(t.String()), error: t.Optional(t.String()) };

const STYLES = ["operations.css"];

export function webhookRoutes(deps: Deps): Route[] {
  const list = consolePage(
    deps,
    { id: "consoleWebhooks", summary: "Webhook endpoints with their state and delivery counts", method: "GET", path: "/console/webhooks", roles: ROLES, query: t.Object(FlashQuery) },
    async (viewer, _request, selected) => {
      const orgId = viewer.actor.orgId;
      const [endpoints, zone] = await Promise.all([listEndpoints(deps.sql, orgId), viewerZone(deps.sql, orgId)]);
      const body = endpointsBody({ endpoints, zone, csrf: csrfField(viewer), flash: flashOf(selected.query) });
      return consoleHtml(deps, viewer, { title: "Webhooks", nav: "webhooks", body, styles: STYLES });
    },
  );

  const one = consolePage(
    deps,
    {
      id: "consoleWebhook",
      summary: "One webhook endpoint: its deliveries (failed first) and, with `delivery`, that delivery's attempts",
      method: "GET",
      path: "/console/webhooks/{id}",
      roles: ROLES,
      query: t.Object({ delivery: t.Optional(t.String({ description: "a delivery's id: its attempts are shown" })), ...FlashQuery }),
    },
    async (viewer, _request, selected) => {
      const raw = selected.params.id ?? "";
      if (!ID.test(raw)) return notFoundPage(deps, viewer);
      const id = Number(raw);
      const orgId = viewer.actor.orgId;
      const [endpoint] = await listEndpoints(deps.sql, orgId, id);
      if (!endpoint) return notFoundPage(deps, viewer);
      const wanted = selected.query.delivery;
      const [deliveries, zone, attempts] = await Promise.all([
        listDeliveries(deps.sql, { endpoint: id, failed: false, limit: DELIVERY_LIMIT, orgId, failedFirst: true }),
        viewerZone(deps.sql, orgId),
        wanted !== undefined && ID.test(wanted) ? listAttempts(deps.sql, Number(wanted), orgId, id) : null,
      ]);
      const body = endpointBody({
        endpoint,
        deliveries,
        selected: attempts === null ? null : { id: Number(wanted), attempts },
        zone,
        csrf: csrfField(viewer),
        flash: flashOf(selected.query),
        limit: DELIVERY_LIMIT,
      });
      return consoleHtml(deps, viewer, { title: `Webhook endpoint ${id}`, nav: "webhooks", body, styles: STYLES });
    },
  );

  const reenable = consolePage(
    deps,
    {
      id: "consoleWebhookEnable",
      summary: "Re-enable an endpoint disabled by a 410 (form: back); audited as webhook.enable",
      method: "POST",
      path: "/console/webhooks/{id}/enable",
      roles: ROLES,
    },
    async (viewer, request, selected) => {
      const raw = selected.params.id ?? "";
      const form = await formOf(request);
      if (!ID.test(raw) || !(await enable(deps, viewer.actor, Number(raw)))) return notFoundPage(deps, viewer);
      const back = form.back === "/console/webhooks" ? form.back : `/console/webhooks/${raw}`;
      return seeOther(`${back}?done=enabled`);
    },
  );

  const replayRoute = consolePage(
    deps,
    {
      id: "consoleWebhookReplay",
      summary: "Send one of the endpoint's deliveries again now (form: delivery); audited as webhook.replay",
      method: "POST",
      path: "/console/webhooks/{id}/replay",
      roles: ROLES,
    },
    async (viewer, request, selected) => {
      const raw = selected.params.id ?? "";
      const form = await formOf(request);
      const delivery = form.delivery ?? "";
      if (!ID.test(raw) || !ID.test(delivery)) return notFoundPage(deps, viewer);
      const r = await replay(deps, viewer.actor, Number(raw), Number(delivery));
      if (!r.ok && r.reason === "not_found") return notFoundPage(deps, viewer);
      return seeOther(`/console/webhooks/${raw}?delivery=${delivery}&${r.ok ? "done=replayed" : `error=${r.reason}`}#attempts`);
    },
  );

  return [list, one, reenable, replayRoute];
}
