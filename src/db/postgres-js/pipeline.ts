// Through a pooler, one statement at a time on each connection: a BEGIN always finds an idle one.
//
// postgres.js 3.4.9 pipelines a statement behind others on a busy connection, and reserves a
// connection for `sql.begin` from its BEGIN's `onexecute` hook, the last term of the `&&` chain
// that `execute` returns (src/connection.js). When BEGIN went behind statements already written
// in the same turn, their bytes were flushed at once, the socket said "full", and the chain stopped
// before the hook (postgres.js issues #823, #1189): BEGIN ran unreserved (UNSAFE_TRANSACTION, a
// 500) and its connection went back to the pool inside an open transaction, where other requests'
// statements ran and failed together ("current transaction is aborted"), and where, through
// PgBouncer, the transaction's unnamed statements and theirs interleaved between Parse and Bind,
// each taking the other's answers: values bound with another statement's parameter types (22P02,
// a TypeError: 500s), statements answered empty or never. After a pooler restart each reconnected
// connection is handed the backlog at once, and this happened in about half the restarts.
//
// Through a pooler nearly every statement already stopped the pipeline (an unnamed statement with
// parameters is described before it is bound, and its connection takes nothing else meanwhile);
// here every statement does, with an `onexecute` hook that answers "nothing more", so no
// connection is left busy-but-open-to-more and BEGIN is only ever sent on an idle connection, where
// nothing is flushed with it. Directly on PostgreSQL, prepared statements keep their pipelining
// (test/pooler-restart.test.ts).
interface QueryOptions {
  onexecute?: (connection: unknown) => unknown;
}

const nothingMore = () => false;

/** `sql` whose statements are never pipelined behind one another (BEGIN's own hook left alone). */
export function unpipelined<S extends object>(sql: S): S {
  const target = sql as unknown as { unsafe: (...args: unknown[]) => unknown };
  const unsafe = target.unsafe;
  target.unsafe = (...args: unknown[]) => alone(unsafe(...args));
  return new Proxy(sql, {
    apply: (fn, self, args) => alone(Reflect.apply(fn as unknown as (...a: unknown[]) => unknown, self, args)),
  });
}

function alone<Q>(q: Q): Q {
  const options = (q as { options?: QueryOptions } | null)?.options;
  // A statement (not an identifier or a fragment), and not BEGIN, whose hook reserves its connection.
  if (q instanceof Promise && options && !options.onexecute) options.onexecute = nothingMore;
  return q;
}
