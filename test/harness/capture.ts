/** Runs a CLI command in-process with stdout and stderr captured. */
export async function capture(fn: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const { stdout, stderr } = process;
  const [w1, w2] = [stdout.write, stderr.write];
  stdout.write = ((chunk: string | Uint8Array) => (out.push(String(chunk)), true)) as typeof stdout.write;
  stderr.write = ((chunk: string | Uint8Array) => (err.push(String(chunk)), true)) as typeof stderr.write;
  try {
    const code = await fn();
    return { code, out: out.join(""), err: err.join("") };
  } finally {
    stdout.write = w1;
    stderr.write = w2;
  }
}

/** The CLI as an operator runs it (src/main.ts in a child process), against database `url`. */
export async function spawnCli(url: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", ...args], {
    cwd: new URL("../..", import.meta.url).pathname,
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "error" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}
