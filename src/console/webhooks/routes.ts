// /console/webhooks: endpoints, one endpoint's deliveries and attempts, replay and re-enable.
// Managers (their organization's endpoints) and admins (all, the house's included).
import { Type as t } from "@sinclair/typebox";
import { listAttempts, listDeliveries, listEndpoints } from "../../events/admin";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idText } from "../../http/fields";
import { idParam, type Route } from "../../http/route";
import { viewerZone } from "../viewer-zone";
import { consoleHtml, csrfField, notFoundPage, seeOther } from "../html";
import { formBody, pageQuery, pageSpec } from "../route";
import type { Role } from "../users";
import { endpointBody, endpointsBody, type Flash } from "./page";
import { enable, replay } from "./service";

const ROLES: Role[] = ["manager", "admin"];
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
  const list = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleWebhooks",
      summary: "Webhook endpoints with their state and delivery counts",
      method: "GET",
      path: "/console/webhooks",
      roles: ROLES,
      query: pageQuery(t.Object(FlashQuery)),
    }),
    async ({ query }, { grant: viewer }) => {
      const orgId = viewer.actor.orgId;
      const [endpoints, zone] = await Promise.all([listEndpoints(deps.sql, orgId), viewerZone(deps.sql, orgId)]);
      const body = endpointsBody({ endpoints, zone, csrf: csrfField(viewer), flash: flashOf(query) });
      return consoleHtml(deps, viewer, { title: "Webhooks", nav: "webhooks", body, styles: STYLES });
    },
  );

  const one = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleWebhook",
      summary: "One webhook endpoint: its deliveries (failed first) and, with `delivery`, that delivery's attempts",
      method: "GET",
      path: "/console/webhooks/{id}",
      roles: ROLES,
      params: idParam,
      query: pageQuery(t.Object({ delivery: t.Optional(t.String({ description: "a delivery's id: its attempts are shown" })), ...FlashQuery })),
    }),
    async ({ params: id, query }, { grant: viewer }) => {
      const orgId = viewer.actor.orgId;
      const [endpoint] = await listEndpoints(deps.sql, orgId, id);
      if (!endpoint) return notFoundPage(deps, viewer);
      const wanted = idText(query.delivery);
      const [deliveries, zone, attempts] = await Promise.all([
        listDeliveries(deps.sql, { endpoint: id, failed: false, limit: DELIVERY_LIMIT, orgId, failedFirst: true }),
        viewerZone(deps.sql, orgId),
        wanted !== null ? listAttempts(deps.sql, wanted, orgId, id) : null,
      ]);
      const body = endpointBody({
        endpoint,
        deliveries,
        selected: attempts === null || wanted === null ? null : { id: wanted, attempts },
        zone,
        csrf: csrfField(viewer),
        flash: flashOf(query),
        limit: DELIVERY_LIMIT,
      });
      return consoleHtml(deps, viewer, { title: `Webhook endpoint ${id}`, nav: "webhooks", body, styles: STYLES });
    },
  );

  const reenable = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleWebhookEnable",
      summary: "Re-enable an endpoint disabled by a 410 (form: back); audited as webhook.enable",
      method: "POST",
      path: "/console/webhooks/{id}/enable",
      roles: ROLES,
      params: idParam,
      body: formBody(t.Object({ back: t.Optional(t.String({ description: "/console/webhooks to come back to the list" })) })),
    }),
    async ({ params: id, body: form }, { grant: viewer }) => {
      if (!(await enable(deps, viewer.actor, id))) return notFoundPage(deps, viewer);
      const back = form.back === "/console/webhooks" ? form.back : `/console/webhooks/${id}`;
      return seeOther(`${back}?done=enabled`);
    },
  );

  const replayRoute = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleWebhookReplay",
      summary: "Send one of the endpoint's deliveries again now (form: delivery); audited as webhook.replay",
      method: "POST",
      path: "/console/webhooks/{id}/replay",
      roles: ROLES,
      params: idParam,
      body: formBody(t.Object({ delivery: t.Optional(t.String({ description: "the delivery's id" })) })),
    }),
    async ({ params: id, body: form }, { grant: viewer }) => {
      const delivery = idText(form.delivery);
      if (delivery === null) return notFoundPage(deps, viewer);
      const r = await replay(deps, viewer.actor, id, delivery);
      if (!r.ok && r.reason === "not_found") return notFoundPage(deps, viewer);
      return seeOther(`/console/webhooks/${id}?delivery=${delivery}&${r.ok ? "done=replayed" : `error=${r.reason}`}#attempts`);
    },
  );

  return [list, one, reenable, replayRoute];
}
