// The per-instance end of the live change feed: one LISTEN on the direct connection (as the key
// cache's, src/auth/service.ts) hears "organization X has changes up to id N" from whichever
// instance numbered them (src/feed/sequencer.ts), and tells the subscribers in this process whose
// tabs show X (an admin's show every organization). A subscriber then reads what it missed with
// `read` (changesSince): the notification only says there is something, so a lost or repeated one
// costs nothing but a read, and a tab that reconnects with its Last-Event-ID reads from there.
//
// Reads are shared: tabs of one organization that ask for the same changes at the same time (every
// tab after a notification) cause one statement, not one each — but only a read started since the
// latest notification is shared. A read already on its way when a notification arrives may have
// taken its snapshot before that change committed: a tab woken by the notification that joined it
// would be answered "nothing new", its listener already spent, and would show the change only at
// the next one (the inbox's 10 s refresh hid this; test/workspace-feed.test.ts races it).
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { errorFields, log } from "../log";
import { changesSince, FEED_CHANNEL, parseHead, type ChangePage } from "./queries";

/** Told the id the organization's changes now reach, or null when unknown (after a reconnect). */
export type FeedListener = (upTo: number | null) => void;

/** The most changes one read returns. */
export const FEED_PAGE = 200;

/** The house's conversations (leads of no organization) are keyed here; only admins see them. */
const HOUSE = -1;

export class FeedHub {
  /** Listeners by organization (HOUSE for null). */
  private byOrg = new Map<number, Set<FeedListener>>();
  /** Admins' listeners: every organization's changes. */
  private everyOrg = new Set<FeedListener>();
  private reads = new Map<string, Promise<ChangePage>>();
  /** Notifications heard so far: a shared read is joined only by tabs asking in the same generation. */
  private generation = 0;
  private count = 0;
  /** What ends each open stream when the instance stops (its tabs reconnect to another). */
  private enders = new Set<() => void>();
  private closed = false;

  /** `reader`: changesSince (a test wraps it to hold an answer back, as a busy database does). */
  constructor(
    private readonly sql: Sql,
    private readonly reader: typeof changesSince = changesSince,
  ) {}

  /**
   * Subscribes a tab of `actor` (its organization; null, an admin: every one). Returns the
   * unsubscribe function, which the stream calls when its tab goes: nothing else holds the listener.
   */
  subscribe(actor: Pick<Actor, "orgId">, listener: FeedListener): () => void {
    const set = actor.orgId === null ? this.everyOrg : this.orgSet(actor.orgId);
    set.add(listener);
    this.count++;
    let gone = false;
    return () => {
      if (gone) return;
      gone = true;
      set.delete(listener);
      this.count--;
      if (actor.orgId !== null && set.size === 0) this.byOrg.delete(actor.orgId);
    };
  }

  /**
   * Registers how a stream ends when the instance stops: a stream lasts as long as its tab, and a
   * graceful stop waits for every request to finish, so the hub ends them first. Returns the
   * function that forgets it (the stream ended on its own).
   */
  onClose(end: () => void): () => void {
    if (this.closed) {
      end();
      return () => {};
    }
    this.enders.add(end);
    return () => void this.enders.delete(end);
  }

  /** Ends every open stream (the instance is stopping); streams opened afterwards end at once. */
  close(): void {
    this.closed = true;
    for (const end of [...this.enders]) {
      try {
        end();
      } catch (err) {
        log.warn("a feed stream failed to end", errorFields(err));
      }
    }
    this.enders.clear();
  }

  private orgSet(orgId: number): Set<FeedListener> {
    let set = this.byOrg.get(orgId);
    if (!set) this.byOrg.set(orgId, (set = new Set()));
    return set;
  }

  /** Subscribers in this process. */
  get subscribers(): number {
    return this.count;
  }

  /** Tells the subscribers of `orgId` (and every admin's) that its changes reach `upTo`; `undefined`: everyone, upTo unknown. */
  publish(orgId: number | null | undefined, upTo: number | null): void {
    // Before any listener reads: reads started from here on are new ones, not those on their way.
    this.generation++;
    const sets =
      orgId === undefined ? [...this.byOrg.values(), this.everyOrg] : [this.byOrg.get(orgId ?? HOUSE), this.everyOrg];
    for (const set of sets) {
      if (!set) continue;
      for (const listener of set) {
        try {
          listener(upTo);
        } catch (err) {
          log.warn("a feed subscriber failed", errorFields(err));
        }
      }
    }
  }

  /**
   * Listens for numbered changes on `direct` (PostgreSQL itself, never a transaction pooler:
   * src/db/open.ts). postgres.js keeps the LISTEN connection and listens again after it drops;
   * notifications sent meanwhile are lost, so every subscriber is told to read then.
   */
  async listen(direct: Sql): Promise<void> {
    await direct.listen(
      FEED_CHANNEL,
      (payload) => {
        const head = parseHead(payload);
        if (head) this.publish(head.org_id, head.upto);
      },
      () => this.publish(undefined, null),
    );
  }

  /**
   * The changes `actor`'s tab missed after `lastId` (changesSince, confined to its organization),
   * one statement for every tab asking the same at once since the latest notification.
   */
  read(actor: Pick<Actor, "orgId">, lastId: number, limit = FEED_PAGE): Promise<ChangePage> {
    const key = `${actor.orgId ?? "all"}:${lastId}:${limit}:${this.generation}`;
    let page = this.reads.get(key);
    if (!page) {
      page = this.reader(this.sql, actor.orgId, lastId, limit).finally(() => this.reads.delete(key));
      this.reads.set(key, page);
    }
    return page;
  }
}
