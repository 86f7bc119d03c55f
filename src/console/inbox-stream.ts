// The inbox's live updates: one Server-Sent Events stream per signed-in tab
// (GET /console/inbox/stream), built on the live feed (src/feed/): the tab subscribes to the hub
// of this instance, which hears every instance's numbered changes by LISTEN/NOTIFY, and reads
// what it has not seen with `FeedHub.read` (changesSince, confined in SQL to the viewer's
// organization; an admin's: every one). Each change goes out as `id: <feed id>`, so a tab that
// lost its connection comes back with `Last-Event-ID` and reads exactly what it missed: ids are
// committed in order, so nothing is lost, and nothing after the last id sent is sent twice. A tab
// away longer than the feed keeps its changes (or from another database) gets `event: reset` and
// reloads. The page (htmx's SSE extension) refreshes the list, the counts, the open conversation
// and the tab title when told `change`; the events carry ids and states, never message text.
import { Type as t } from "@sinclair/typebox";
import type { Change } from "../feed/queries";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { log, errorFields } from "../log";
import { CONSOLE_TAG, consoleJson, EVERYONE, pageQuery, signedIn } from "./route";

/** A comment line this often: proxies and the server's idle timeout (10 s) see a live connection. */
export const HEARTBEAT_MS = 5_000;
/** How long a browser waits before reconnecting (the `retry:` field). */
const RETRY_MS = 2_000;

const StreamQuery = t.Object({
  after: t.Optional(t.String({ pattern: "^\\d{1,18}$", description: "the feed id the page was rendered at (its stream starts after it); Last-Event-ID wins" })),
});

/** Where the stream resumes: the browser's Last-Event-ID (a reconnection), else the page's `after`, else the feed's head. */
export function resumeFrom(lastEventId: string | null, after: string | undefined): number | null {
  for (const v of [lastEventId, after]) if (v !== null && v !== undefined && /^\d{1,18}$/.test(v.trim())) return Number(v.trim());
  return null;
}

/** One change as an SSE event: what the page needs to know to refresh, no message text. */
export function changeEvent(c: Change): string {
  const d = c.data as Record<string, unknown>;
  const data = {
    kind: c.kind,
    conversation: c.conversation_id,
    lead: c.lead_id,
    status: d.status ?? null,
    assignee: d.assignee ?? null,
    direction: d.direction ?? null,
    channel: d.channel ?? null,
  };
  return `id: ${c.id}\nevent: change\ndata: ${JSON.stringify(data)}\n\n`;
}

export function inboxStreamRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      {
        id: "consoleInboxStream",
        summary: "The inbox's live updates: Server-Sent Events of the organization's workspace changes (one stream per tab)",
        description:
          "`event: change` per change of the viewer's organization (`id:` its feed id; data: kind, conversation, lead, status, assignee, direction, channel); " +
          "`event: reset` when the tab must reload (it asked from before the feed's retention). Resumes after `Last-Event-ID` (or the page's `after`) without loss or repeat.",
        method: "GET",
        path: "/console/inbox/stream",
        tag: CONSOLE_TAG,
        access: signedIn(deps, EVERYONE, "GET"),
        surface: consoleJson,
        query: pageQuery(StreamQuery),
        answers: { 200: { description: "The event stream", contentType: "text/event-stream" } },
        // The stream lasts as long as the tab: it bounds its own work (one read per wake-up).
        deadlineMs: null,
      },
      async ({ query }, { grant: viewer, request }) => {
        const actor = { orgId: viewer.actor.orgId };
        let last = resumeFrom(request.headers.get("last-event-id"), query.after) ?? (await deps.feed.read(actor, Number.MAX_SAFE_INTEGER, 1)).last;
        const encoder = new TextEncoder();
        let wake: (() => void) | null = null;
        let pending = true; // read once at the start: what happened since the page was drawn
        let closed = false;
        let unsubscribe = () => {};
        let forget = () => {};
        let heartbeat: ReturnType<typeof setInterval> | undefined;
        let end = () => {};
        const stop = () => {
          if (closed) return;
          closed = true;
          unsubscribe();
          forget();
          clearInterval(heartbeat);
          wake?.();
          end();
        };
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            const send = (text: string) => {
              if (closed) return;
              try {
                controller.enqueue(encoder.encode(text));
              } catch {
                stop();
              }
            };
            unsubscribe = deps.feed.subscribe(actor, () => {
              pending = true;
              wake?.();
            });
            request.signal.addEventListener("abort", stop, { once: true });
            end = () => {
              try {
                controller.close();
              } catch {}
            };
            forget = deps.feed.onClose(stop);
            heartbeat = setInterval(() => send(": ping\n\n"), HEARTBEAT_MS);
            send(`retry: ${RETRY_MS}\n: connected\n\n`);
            void (async () => {
              while (!closed) {
                if (!pending) await new Promise<void>((resolve) => (wake = resolve));
                wake = null;
                if (closed) break;
                pending = false;
                try {
                  for (;;) {
                    const page = await deps.feed.read(actor, last);
                    if (closed) break;
                    if (page.reset) {
                      send(`id: ${page.last}\nevent: reset\ndata: {}\n\n`);
                    } else {
                      for (const c of page.changes) send(changeEvent(c));
                    }
                    last = page.last;
                    if (!page.more) break;
                  }
                } catch (err) {
                  // The database away for a moment: the next notification (or reconnection) reads again.
                  log.warn("inbox stream read failed", errorFields(err));
                }
              }
              end();
            })();
          },
          cancel: stop,
        });
        return new Response(stream, {
          headers: {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-store",
            "x-accel-buffering": "no",
            "x-content-type-options": "nosniff",
          },
        });
      },
    ),
  ];
}
