// The embedded database's control socket: `serve` runs an operator command (./commands.ts) for a
// CLI started beside it, since the CLI cannot open the database itself (PGlite is one process's;
// DATA_DIR is locked) and the database is never offered on TCP or to a foreign session.
//
// Who may connect: the socket is 0600 inside a 0700 directory owned by the server's user, so only
// that user (and root) can reach it. Bun does not expose the peer's credentials (SO_PEERCRED), so
// the modes are the check. What may run: only SOCKET_COMMANDS, each as ordinary queries through
// the server's own pool; nothing sent reaches the database's session otherwise.
//
// Protocol, newline-delimited JSON. The CLI sends one line: {"argv": [...], "input"?: {"path",
// "text" | "error"}} (the file or standard input `provision` reads, read by the CLI). The server
// answers with lines {"o": text} (stdout) and {"e": text} (stderr), then {"exit": status}.
import { chmodSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import type { Io } from "../args";
import type { Config } from "../config";
import type { Sql } from "../db/client";
import { UsageError } from "../errors";
import { log } from "../log";
import { prepareSocketPath } from "./path";
import { SOCKET_COMMANDS, reportError, runCommand } from "./commands";

/** A provisioning file is the largest thing a request carries. */
const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** At shutdown, commands in flight get this long before their connections are cut (a dump to a reader that stopped reading). */
const CLOSE_GRACE_MS = 10_000;
/** A client that connects and sends nothing is dropped after this long. */
const REQUEST_DEADLINE_MS = 10_000;

export interface ControlRequest {
  argv: string[];
  input?: { path: string; text?: string; error?: string };
}

export interface Control {
  path: string;
  /** Stops accepting and waits for the commands in flight. */
  close(): Promise<void>;
}

/** `afterCommand`: run after each command (the key cache is emptied: no LISTEN on the embedded database). */
export async function startControl(sql: Sql, config: Config, afterCommand: () => void): Promise<Control> {
  const path = prepareSocketPath(config);
  const inFlight = new Map<Promise<void>, Socket>();
  const server: Server = createServer((conn) => {
    const done = serveConnection(conn, sql, config).finally(() => {
      inFlight.delete(done);
      afterCommand();
    });
    inFlight.set(done, conn);
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(path, () => ok());
  });
  chmodSync(path, 0o600);
  return {
    path,
    close: async () => {
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      let timer: Timer | undefined;
      const late = new Promise<"late">((ok) => (timer = setTimeout(() => ok("late"), CLOSE_GRACE_MS)));
      if ((await Promise.race([Promise.allSettled([...inFlight.keys()]), late])) === "late") {
        for (const conn of inFlight.values()) conn.destroy();
        await Promise.allSettled([...inFlight.keys()]);
      }
      clearTimeout(timer);
      await closed;
      rmSync(path, { force: true });
    },
  };
}

async function serveConnection(conn: Socket, sql: Sql, config: Config): Promise<void> {
  let closed = false;
  conn.on("close", () => (closed = true));
  conn.on("error", () => (closed = true));
  const send = (frame: object) => {
    if (!closed) conn.write(JSON.stringify(frame) + "\n");
  };
  let request: ControlRequest;
  try {
    request = await readRequest(conn);
  } catch (err) {
    send({ e: `leadline: control socket: ${(err as Error).message}\n` });
    send({ exit: 2 });
    conn.end();
    return;
  }
  const io: Io = {
    out: (text) => send({ o: text }),
    err: (text) => send({ e: text }),
    readInput: async (path) => {
      const input = request.input;
      if (!input || input.path !== path) throw Object.assign(new Error("not sent"), { code: "ENOENT" });
      if (input.error !== undefined) throw Object.assign(new Error(input.error), { code: input.error });
      return input.text ?? "";
    },
    flush: () =>
      closed
        ? Promise.reject(new Error("the client went away"))
        : conn.writableNeedDrain
          ? new Promise((ok, fail) => {
              conn.once("drain", () => ok());
              conn.once("close", () => fail(new Error("the client went away")));
            })
          : Promise.resolve(),
  };
  const [cmd, sub] = request.argv;
  let status: number;
  try {
    if (!SOCKET_COMMANDS.has(cmd)) {
      throw new UsageError(`${JSON.stringify(request.argv.slice(0, 2).join(" "))} cannot run while serve runs on the embedded database; stop serve first`);
    }
    status = await runCommand(sql, config, request.argv, io);
  } catch (err) {
    status = reportError(err, io);
  }
  log.info("control command", { command: cmd, subcommand: typeof sub === "string" && /^[a-z]+$/.test(sub) ? sub : null, exit: status });
  send({ exit: status });
  conn.end();
}

/** The one request line, bounded in size and time. */
function readRequest(conn: Socket): Promise<ControlRequest> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => finish(new Error("no request within 10 s")), REQUEST_DEADLINE_MS);
    const finish = (err: Error | null, req?: ControlRequest) => {
      clearTimeout(timer);
      conn.off("data", onData);
      conn.pause();
      if (err) fail(err);
      else ok(req!);
    };
    const onData = (chunk: Buffer) => {
      const nl = chunk.indexOf(10);
      chunks.push(nl === -1 ? chunk : chunk.subarray(0, nl));
      size += chunk.length;
      if (nl === -1) {
        if (size > MAX_REQUEST_BYTES) finish(new Error("request too large"));
        return;
      }
      try {
        finish(null, parseRequest(Buffer.concat(chunks).toString("utf8")));
      } catch (err) {
        finish(err as Error);
      }
    };
    conn.on("data", onData);
    conn.once("end", () => finish(new Error("no request")));
  });
}

function parseRequest(line: string): ControlRequest {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new Error("the request is not JSON");
  }
  const v = value as Partial<ControlRequest> | null;
  if (!v || !Array.isArray(v.argv) || v.argv.length === 0 || !v.argv.every((a) => typeof a === "string")) throw new Error("argv must be a non-empty array of strings");
  const input = v.input;
  if (input !== undefined && (typeof input !== "object" || input === null || typeof input.path !== "string")) throw new Error("input must be an object with a path");
  return { argv: v.argv, input };
}

