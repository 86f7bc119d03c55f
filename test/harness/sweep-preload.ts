// Preloaded into every test file (bunfig.toml), active only under test/run.ts's log sweep
// (test/harness/sweep.ts): this process's log lines, every level, go to the run's log copy, and
// what its requests carry and receive is recorded as secrets to look for there.
import { copyLogTo } from "../../src/log";
import { LOG_FILE, recordRequest, recordResponse, SWEEP_DIR_VAR } from "./sweep";

const dir = process.env[SWEEP_DIR_VAR];
if (dir) {
  copyLogTo(`${dir}/${LOG_FILE}`);
  const inner = globalThis.fetch;
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    recordRequest(url, input instanceof Request ? { headers: input.headers, ...init } : init);
    const res = await inner(input, init);
    await recordResponse(res);
    return res;
  };
  globalThis.fetch = Object.assign(recording, inner) as typeof fetch;
}
