// `sql.begin` with a transaction that ends with its connection.
//
// postgres.js 3.4.9 (src/index.js, `begin`) rejects `sql.begin` when the transaction's connection
// closes, but the callback goes on, and its transaction handle still sends on that connection
// object, which the pool meanwhile reconnects and hands to other work (postgres.js issues #1186,
// #1216). A statement the callback sends after the loss (or the commit or rollback postgres.js
// sends for it when it returns or throws) then runs outside any transaction, or inside another
// request's, and its protocol messages interleave with that work's: each takes the other's answer.
// A statement queued behind a busy one in the transaction never settles at all. Here, once the
// connection is lost (a statement of the transaction rejected for it, or `begin` settled), every
// statement of the transaction still waiting is rejected, a new one is rejected before it is sent,
// and the callback's end is never passed on, so no commit or rollback is sent: the transaction
// died with its connection on the server (test/pooler-restart.test.ts).

/** What a query of postgres.js carries that is used here (src/query.js). */
interface QueryInternals {
  handler(q: unknown): unknown;
  resolve(x: unknown): void;
  reject(err: unknown): void;
}

type Fn = (tx: any) => unknown;
type Begin = (options: string | Fn, fn?: Fn) => Promise<unknown>;

const never = () => new Promise<never>(() => {});

/**
 * Replaces `sql.begin` (postgres.js's) with the guarded one. `lostConnection` tells an error that
 * means the connection is gone (src/db/sqlstate.ts): passed in, so this layer depends on nothing of
 * the service.
 */
export function guardTransactions(sql: { begin: unknown }, lostConnection: (err: unknown) => boolean): void {
  const begin = sql.begin as Begin;
  const guarded: Begin = (options, fn) => {
    if (typeof options === "function") return guarded("", options);
    let lost: unknown = null;
    const waiting = new Set<QueryInternals>();
    const lose = (err: unknown) => {
      if (lost !== null) return;
      lost = err ?? new Error("the transaction is over");
      for (const q of waiting) q.reject(lost);
      waiting.clear();
    };

    const query = <Q>(q: Q): Q => {
      if (!(q instanceof Promise) || typeof (q as unknown as QueryInternals).handler !== "function") return q;
      const internals = q as unknown as QueryInternals;
      const { handler, resolve, reject } = internals;
      internals.handler = (self) => {
        if (lost !== null) return reject(lost);
        waiting.add(internals);
        return handler(self);
      };
      internals.resolve = (x) => {
        waiting.delete(internals);
        resolve(x);
      };
      internals.reject = (err) => {
        waiting.delete(internals);
        reject(err);
        if (lostConnection(err)) lose(err);
      };
      return q;
    };
    const handle = (tx: any): any =>
      new Proxy(tx, {
        apply: (target, self, args) => query(Reflect.apply(target, self, args)),
        get: (target, key, receiver) => {
          if (key === "unsafe") return (...args: unknown[]) => query(target.unsafe(...args));
          if (key === "savepoint") {
            return (...args: unknown[]) => {
              const inner = args.pop() as Fn;
              return target.savepoint(...args, (sp: unknown) => inner(handle(sp)));
            };
          }
          return Reflect.get(target, key, receiver);
        },
      });

    const done = begin(options, async (tx) => {
      let out: unknown;
      try {
        out = await fn!(handle(tx));
      } catch (err) {
        if (lost !== null) return never();
        throw err;
      }
      if (lost !== null) return never();
      return out;
    });
    done.then(
      () => lose(null),
      (err) => lose(err),
    );
    return done;
  };
  sql.begin = guarded;
}
