// The compiled executable run as an operator runs it (a copy in a temp directory, a bare
// environment), for tests that drive `serve` and the CLI side by side. `make build` first.
import type { Subprocess } from "bun";
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { TEST_DEADLINE_MS } from "./deadline";

export const BUILT = resolve(import.meta.dir, "../../dist/leadline");
export const built = existsSync(BUILT);

// Give-ups, not bounds: a start opens PGlite (a new DATA_DIR from the image built into the
// executable, src/db/image.ts), about a second on a quiet machine and many times that on a busy one.
export const START_MS = 45_000;
export const STOP_MS = 10_000;

export interface Run {
  code: number;
  out: string;
  err: string;
}

export interface Serving {
  pid: number;
  base: string;
  /** Standard output's lines (JSON log lines). */
  lines: string[];
  /** Standard error's lines as they come (text for a person: the installer link). */
  errLines: string[];
  stop(): Promise<number | null>;
}

export class Exe {
  readonly dir = mkdtempSync(join(tmpdir(), "leadline-exe-"));
  readonly bin = join(this.dir, "leadline");
  private children = new Set<Subprocess>();

  constructor() {
    copyFileSync(BUILT, this.bin);
    chmodSync(this.bin, 0o755);
  }

  /**
   * No inherited DATABASE_URL, PORT or node_modules: only what the test names, and the log sweep's
   * LOG_COPY_FILE under test/run.ts (test/harness/sweep.ts), which changes nothing the test sees.
   */
  env(env: Record<string, string>): Record<string, string> {
    const copy: Record<string, string> = process.env.LOG_COPY_FILE ? { LOG_COPY_FILE: process.env.LOG_COPY_FILE } : {};
    // The tests' longer request deadline (harness/app.ts): a machine busy with other work delays
    // answers past the contract's second without anything being wrong; the tests about the
    // deadline give the contract's (REQUEST_DEADLINE_MS: "1000").
    return { PATH: "/usr/bin:/bin", HOME: this.dir, REQUEST_DEADLINE_MS: String(TEST_DEADLINE_MS), ...copy, ...env };
  }

  /** `timeoutMs`: how long before the command is killed (a restore on a loaded machine takes longer than a start). */
  async run(args: string[], env: Record<string, string>, stdin?: string, timeoutMs = START_MS): Promise<Run> {
    const proc = Bun.spawn([this.bin, ...args], {
      cwd: this.dir,
      env: this.env(env),
      stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
      stdout: "pipe",
      stderr: "pipe",
    });
    this.children.add(proc);
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    this.children.delete(proc);
    return { code, out, err };
  }

  /** `leadline serve` on a port of its choosing, read back from its "listening" log line. */
  async serve(env: Record<string, string>): Promise<Serving> {
    const proc = Bun.spawn([this.bin, "serve"], { cwd: this.dir, env: this.env({ PORT: "0", HOST: "127.0.0.1", ...env }), stdout: "pipe", stderr: "pipe" });
    this.children.add(proc);
    const errLines: string[] = [];
    const stderr = (async () => {
      let text = "";
      const decoder = new TextDecoder();
      for await (const chunk of proc.stderr) {
        text += decoder.decode(chunk, { stream: true });
        errLines.splice(0, errLines.length, ...text.split("\n"));
      }
      return text;
    })();
    const lines: string[] = [];
    let onListening: (port: number) => void = () => {};
    const listening = new Promise<number>((ok) => (onListening = ok));
    const reading = (async () => {
      let buf = "";
      const decoder = new TextDecoder();
      for await (const chunk of proc.stdout) {
        buf += decoder.decode(chunk, { stream: true });
        for (let i = buf.indexOf("\n"); i !== -1; i = buf.indexOf("\n")) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          lines.push(line);
          if (line.includes('"msg":"listening"')) onListening(JSON.parse(line).port);
        }
      }
      if (buf) lines.push(buf);
    })();
    let timer: Timer | undefined;
    const port = await Promise.race([
      listening,
      proc.exited.then(async (code) => {
        throw new Error(`serve exited with ${code} before listening: ${await stderr}${lines.join("\n")}`);
      }),
      new Promise<never>((_, fail) => {
        timer = setTimeout(() => {
          proc.kill("SIGKILL");
          fail(new Error(`serve did not listen within ${START_MS} ms`));
        }, START_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    const children = this.children;
    return {
      pid: proc.pid,
      base: `http://127.0.0.1:${port}`,
      lines,
      errLines,
      async stop() {
        proc.kill("SIGTERM");
        const code = await Promise.race([proc.exited, Bun.sleep(STOP_MS).then(() => null)]);
        if (code === null) proc.kill("SIGKILL");
        await reading;
        await stderr;
        children.delete(proc);
        return code;
      },
    };
  }

  cleanup(): void {
    for (const child of this.children) child.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}
