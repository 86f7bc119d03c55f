// The CLI's side of the control socket (./server.ts): hands a command to the `serve` that holds
// the embedded database, relays what it prints, and returns its exit status.
import { createConnection } from "node:net";
import type { ControlRequest } from "./server";

export interface Relay {
  /** Where the command's stdout goes (the terminal, or `dump FILE`'s file); false: wait for drain. */
  out(text: string): boolean;
  err(text: string): void;
  drain(): Promise<void>;
}

/**
 * The command's exit status, or null when no server answers on `path` (none running, or a socket
 * left by one that crashed): the caller then opens the database itself.
 */
export function relayCommand(path: string, request: ControlRequest, relay: Relay): Promise<number | null> {
  return new Promise((ok, fail) => {
    const conn = createConnection(path);
    let connected = false;
    let status: number | null = null;
    let buf = "";
    conn.setEncoding("utf8");
    conn.once("connect", () => {
      connected = true;
      conn.write(JSON.stringify(request) + "\n");
    });
    conn.on("data", (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) !== -1) {
        const frame = JSON.parse(buf.slice(0, nl)) as { o?: string; e?: string; exit?: number };
        buf = buf.slice(nl + 1);
        if (typeof frame.o === "string" && !relay.out(frame.o)) {
          conn.pause();
          void relay.drain().then(() => conn.resume());
        }
        if (typeof frame.e === "string") relay.err(frame.e);
        if (typeof frame.exit === "number") status = frame.exit;
      }
    });
    conn.on("error", (err: NodeJS.ErrnoException) => {
      if (!connected && (err.code === "ENOENT" || err.code === "ECONNREFUSED")) ok(null);
      else fail(new Error(`control socket ${path}: ${err.code ?? err.message}`));
    });
    conn.on("close", () => {
      if (!connected) return;
      if (status === null) fail(new Error("serve closed the control connection before the command finished"));
      else ok(status);
    });
  });
}
