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
//
// A tab whose session has ended is told so in the stream, never refused: an EventSource reads only
// a 200 event stream and retries anything else (htmx's SSE extension again and again, each time
// getting the refusal). Without a live session the answer is one `signed-out` event, with a retry
// of a day for a browser whose script does not act on it; an open stream checks its session as it
// goes (sign-out in another tab, expiry, revocation) and ends the same way. The page goes to sign-in.
import { Type as t } from "@sinclair/typebox";
import type { Change } from "../feed/queries";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { log, errorFields } from "../log";
import { CONSOLE_TAG, consoleJson, EVERYONE, pageQuery, signedInOrOut } from "./route";
import { sessionLive } from "./sessions";

/** A comment line this often: proxies and the server's idle timeout (10 s) see a live connection; the session is checked as often. */
export const HEARTBEAT_MS = 5_000;
/** How long a browser waits before reconnecting (the `retry:` field). */
const RETRY_MS = 2_000;
/** A signed-out tab's browser reconnects no sooner than this, should its script not act on the event. */
const SIGNED_OUT_RETRY_MS = 86_400_000;

/** Where a signed-out tab goes (the page uses its own address as `next`: the inbox as it shows it). */
const SIGN_IN = `/console/login?next=${encodeURIComponent("/console/inbox")}`;
export const SIGNED_OUT_EVENT = `retry: ${SIGNED_OUT_RETRY_MS}\nevent: signed-out\ndata: ${JSON.stringify({ location: SIGN_IN })}\n\n`;

const STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  "x-accel-buffering": "no",
  "x-content-type-options": "nosniff",
};

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
          "`event: reset` when the tab must reload (it asked from before the feed's retention). Resumes after `Last-Event-ID` (or the page's `after`) without loss or repeat. " +
          "Without a live session (signed out, expired, revoked; checked as the stream goes, too) the answer is still 200: one `event: signed-out` (data: `location`, the sign-in page) with `retry:` a day, then the end, so that the browser stops reconnecting and the page goes to sign-in.",
        method: "GET",
        path: "/console/inbox/stream",
        tag: CONSOLE_TAG,
        access: signedInOrOut(deps, EVERYONE),
        surface: consoleJson,
        query: pageQuery(StreamQuery),
        answers: { 200: { description: "The event stream; without a live session, one `signed-out` event", contentType: "text/event-stream" } },
        // The stream lasts as long as the tab: it bounds its own work (one read per wake-up).
        deadlineMs: null,
      },
      async ({ query }, { grant: viewer, request }) => {
        if (viewer === null) return new Response(SIGNED_OUT_EVENT, { headers: STREAM_HEADERS });
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
            // Each heartbeat also checks the session (one indexed lookup; it does not refresh the
            // session's idle time): a tab signed out elsewhere is told within a heartbeat or two.
            let checking = false;
            heartbeat = setInterval(() => {
              send(": ping\n\n");
              if (checking || closed) return;
              checking = true;
              sessionLive(deps.sql, viewer.sessionId, deps.clock.now())
                .then((live) => {
                  if (live) return;
                  send(SIGNED_OUT_EVENT);
                  stop();
                })
                .catch((err) => log.warn("inbox stream session check failed", errorFields(err)))
                .finally(() => (checking = false));
            }, HEARTBEAT_MS);
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
        return new Response(stream, { headers: STREAM_HEADERS });
      },
    ),
  ];
}
