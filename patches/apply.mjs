// Applied by `npm install`/`npm ci` (package.json postinstall). Each edit names the exact text it
// replaces and fails the install if neither that nor its replacement is found, so a version bump
// cannot silently drop a fix.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

const edits = [
  {
    // porsager/postgres#1208 (open upstream as of 3.4.9): a small write is flushed from a
    // setImmediate that can run after closed() has nulled the socket; the TypeError it throws
    // escapes every caller and kills the process. Settle the pending queries instead.
    file: "node_modules/postgres/src/connection.js",
    from: "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)",
    to:
      "  function nextWrite(fn) {\n" +
      "    if (!socket) { // leadline patch: postgres#1208\n" +
      "      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n" +
      "      chunk = nextWriteTimer = null\n" +
      "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
      "      return false\n" +
      "    }\n" +
      "    const x = socket.write(chunk, fn)",
  },
  {
    // closed() cancels the pending flush but keeps its handle and the unsent bytes, so the next
    // connection's startup message is appended to stale bytes and never flushed (the timer handle
    // is not null); the reconnect then waits out connect_timeout. Drop both.
    file: "node_modules/postgres/src/connection.js",
    from: "    incomings = null\n    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)",
    to:
      "    incomings = null\n    clearImmediate(nextWriteTimer)\n" +
      "    chunk = nextWriteTimer = null // leadline patch: stale buffer after close\n" +
      "    socket.removeListener('data', data)",
  },
  {
    // The pool keeps its connections in Queues whose shift() only frees the array once it is
    // empty. Under sustained load the busy queue never empties: every query shifts a connection
    // and pushes it back, so the array grows by one slot per query, and remove() scans it from
    // the start (indexOf) on every move. Per-query CPU grows with the number of queries served
    // since the queue last emptied (measured here: 16 µs → 67 µs over 360,000 queries) and the
    // memory is never returned. Compact once half the array is spent, and search from the head.
    file: "node_modules/postgres/src/queue.js",
    from: "      const index = xs.indexOf(x)\n      return index === -1\n        ? null\n        : (xs.splice(index, 1), x)",
    to:
      "      const at = xs.indexOf(x, index) // leadline patch: queue growth\n" +
      "      return at === -1\n        ? null\n        : (xs.splice(at, 1), x)",
  },
  {
    file: "node_modules/postgres/src/queue.js",
    from: "      if (index === xs.length) {\n        index = 0\n        xs = []\n      } else {",
    to:
      "      if (index === xs.length) {\n        index = 0\n        xs = []\n" +
      "      } else if (index >= 1024 && index * 2 >= xs.length) { // leadline patch: queue growth\n" +
      "        xs = xs.slice(index)\n        index = 0\n      } else {",
  },
];

for (const { file, from, to } of edits) {
  const path = root + file;
  const text = readFileSync(path, "utf8");
  if (text.includes(to)) continue;
  if (!text.includes(from)) {
    console.error(`patches/apply.mjs: ${file} does not contain the text to patch; review the patch for this version`);
    process.exit(1);
  }
  writeFileSync(path, text.replace(from, to));
  console.log(`patches/apply.mjs: patched ${file}`);
}
