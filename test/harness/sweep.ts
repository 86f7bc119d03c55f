// The log sweep of `make test`: no plaintext API key, booking token, provider credential, webhook
// secret or raw client address in any line the service logs during the whole run.
//
// test/run.ts makes a directory and names it in LEADLINE_TEST_SWEEP_DIR, and LOG_COPY_FILE (a file
// in it) for every process of the run: the test processes (sweep-preload.ts copies their
// in-process servers' lines, every level, whatever LOG_LEVEL lets through to stdout) and everything
// they spawn with the environment passed on (`src/main.ts`, the compiled executable through
// test/harness/exe.ts). The secrets are recorded where the tests meet them: the factory's keys,
// the fake providers' credentials, and what every test request carries (keys, tokens, client
// addresses in X-Forwarded-For / X-Real-IP) or receives (booking tokens). When the tests are done,
// run.ts scans every logged line for them and for the shapes no log line may hold at all (`lk_`
// keys, `whsec_` secrets), and fails the run on a finding.
import { existsSync, openSync, readFileSync, writeSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";

export const SWEEP_DIR_VAR = "LEADLINE_TEST_SWEEP_DIR";
export const LOG_FILE = "log.jsonl";
const SECRETS_FILE = "secrets.jsonl";

export type SecretKind = "api key" | "booking token" | "provider credential" | "webhook secret" | "feed secret" | "metrics token" | "client address";

/** Shorter recorded values are not scanned for: a test's "secret" or "tok" is a word of log text. */
export const MIN_SECRET_LENGTH = 10;

const sweepDir = (): string | null => process.env[SWEEP_DIR_VAR] || null;

/** This process's handle on the run's secrets file, and what it has written there already. */
let secretsFd: number | null = null;
const written = new Set<string>();

/** Records a secret a test generated or presented, for the end-of-run scan. */
export function recordSecret(kind: SecretKind, value: string | null | undefined): void {
  const dir = sweepDir();
  if (!dir || !value) return;
  if (kind === "client address") {
    const ip = canonicalIp(value);
    if (ip === null || !isClientAddress(ip)) return;
    value = ip;
  } else if (value.length < MIN_SECRET_LENGTH) return;
  // A rate-limit test presents one key thousands of times: written once.
  if (written.has(value)) return;
  written.add(value);
  secretsFd ??= openSync(join(dir, SECRETS_FILE), "a");
  writeSync(secretsFd, JSON.stringify({ kind, value }) + "\n");
}

/** The addresses of the machine itself: every server of the suite listens on them, so they are in lines about listening and delivering. */
function isClientAddress(canonical: string): boolean {
  return !["127.0.0.1", "0.0.0.0", "0:0:0:0:0:0:0:1", "0:0:0:0:0:0:0:0"].includes(canonical) && !canonical.startsWith("127.");
}

/** An IPv4 address as is, an IPv6 address as eight groups of lowercase hex without leading zeros; null for anything else. */
export function canonicalIp(text: string): string | null {
  let t = text.trim();
  if (t.startsWith("[") && t.includes("]")) t = t.slice(1, t.indexOf("]"));
  const v = isIP(t);
  if (v === 4) return t;
  if (v !== 6) return null;
  t = t.toLowerCase().replace(/%.*$/, "");
  let tail: string[] = [];
  const v4 = t.match(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    tail = [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
    t = t.slice(0, v4.index).replace(/:$/, "") || ":";
    if (t === ":") t = "::";
  }
  const [head, rest] = t.includes("::") ? t.split("::") : [t, null];
  const left = head ? head.split(":") : [];
  const right = rest ? rest.split(":") : [];
  const missing = 8 - tail.length - left.length - right.length;
  const groups = rest === null ? [...left, ...tail] : [...left, ...Array(Math.max(0, missing)).fill("0"), ...right, ...tail];
  return groups.map((g) => parseInt(g || "0", 16).toString(16)).join(":");
}

export interface Secret {
  kind: SecretKind;
  value: string;
}

export interface Finding {
  /** Which secret or shape, never the value itself. */
  kind: string;
  line: number;
  /** The line with the secret masked. */
  excerpt: string;
}

/** Shapes no log line may hold, whoever made them: keys and webhook secrets have recognisable forms. */
const SHAPES: { kind: string; re: RegExp }[] = [
  { kind: "api key (lk_ shape)", re: /lk_[A-Za-z0-9_-]{20,}/g },
  { kind: "webhook secret (whsec_ shape)", re: /whsec_[A-Za-z0-9+/=]{16,}/g },
];

// Candidate address literals in a line: IPv4, and IPv6 (at least two colons), bounded by characters
// neither can contain.
const IPV4 = /(?<![0-9A-Za-z.])\d{1,3}(?:\.\d{1,3}){3}(?![0-9A-Za-z.])/g;
const IPV6 = /(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|\d{1,3}(?:\.\d{1,3}){3})?(?![0-9A-Fa-f:.])/g;
/** Runs of the characters generated keys and tokens are made of (base64url). */
const WORD = /[A-Za-z0-9_-]{10,}/g;
const WORDISH = /^[A-Za-z0-9_-]+$/;

const mask = (line: string, value: string) => line.split(value).join(`<${value.slice(0, 3)}…>`);

/**
 * Every line holding a recorded secret, a recorded client address or a forbidden shape. Secrets
 * made of base64url characters are looked up among the substrings of each line's base64url runs
 * (thousands of keys against thousands of lines stay linear); others are searched for plainly.
 */
export function scanLines(lines: readonly string[], secrets: readonly Secret[]): Finding[] {
  const words = new Map<string, SecretKind>();
  const others: Secret[] = [];
  const clients = new Map<string, SecretKind>();
  for (const s of secrets) {
    if (s.kind === "client address") clients.set(s.value, s.kind);
    else if (WORDISH.test(s.value)) words.set(s.value, s.kind);
    else others.push(s);
  }
  const lengths = [...new Set([...words.keys()].map((w) => w.length))].sort((a, b) => a - b);
  const found: Finding[] = [];
  lines.forEach((line, i) => {
    const hits: { kind: string; value: string }[] = [];
    for (const { kind, re } of SHAPES) for (const m of line.matchAll(re)) hits.push({ kind, value: m[0] });
    for (const m of line.matchAll(WORD)) {
      const run = m[0];
      for (const n of lengths) {
        if (n > run.length) break;
        for (let at = 0; at + n <= run.length; at++) {
          const kind = words.get(run.slice(at, at + n));
          if (kind) hits.push({ kind, value: run.slice(at, at + n) });
        }
      }
    }
    for (const s of others) if (line.includes(s.value)) hits.push(s);
    if (clients.size > 0) {
      for (const re of [IPV4, IPV6]) {
        for (const m of line.matchAll(re)) {
          const ip = canonicalIp(m[0]);
          if (ip !== null && clients.has(ip)) hits.push({ kind: "client address", value: m[0] });
        }
      }
    }
    if (hits.length === 0) return;
    let excerpt = line;
    for (const h of hits) excerpt = mask(excerpt, h.value);
    for (const kind of new Set(hits.map((h) => h.kind))) found.push({ kind, line: i + 1, excerpt: excerpt.slice(0, 400) });
  });
  return found;
}

export interface SweepResult {
  lines: number;
  secrets: number;
  findings: Finding[];
}

/** The end-of-run scan of a sweep directory (test/run.ts). */
export function scanSweep(dir: string): SweepResult {
  const read = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8").split("\n").filter((l) => l !== "") : []);
  const lines = read(LOG_FILE);
  const secrets = new Map<string, Secret>();
  for (const l of read(SECRETS_FILE)) {
    try {
      const s = JSON.parse(l) as Secret;
      secrets.set(s.value, s);
    } catch {}
  }
  return { lines: lines.length, secrets: secrets.size, findings: scanLines(lines, [...secrets.values()]) };
}

// ---- What test requests carry and receive (installed by sweep-preload.ts) ----

/** JSON or form fields whose values are secrets. */
const SECRET_FIELDS: Record<string, SecretKind> = {
  api_key: "api key",
  token: "booking token",
  secret: "webhook secret",
  auth_token: "provider credential",
  password: "provider credential",
};
/** A reschedule token's shape, for the contract's short alias `r`. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

function recordFields(value: unknown, depth = 0): void {
  if (depth > 6 || value === null || typeof value !== "object") return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v === "string") {
      const kind = SECRET_FIELDS[k];
      if (kind) recordSecret(kind, v);
      else if (k === "r" && TOKEN_SHAPE.test(v)) recordSecret("booking token", v);
    } else recordFields(v, depth + 1);
  }
}

function recordBody(body: unknown): void {
  if (typeof body !== "string" || body.length > 1_000_000) return;
  try {
    recordFields(JSON.parse(body));
    return;
  } catch {}
  if (body.includes("=")) recordFields(Object.fromEntries(new URLSearchParams(body)));
}

export function recordRequest(url: string, init: RequestInit | undefined): void {
  const headers = new Headers(init?.headers);
  recordSecret("api key", headers.get("x-api-key"));
  const auth = headers.get("authorization");
  if (auth?.toLowerCase().startsWith("bearer ")) recordSecret("metrics token", auth.slice(7).trim());
  for (const name of ["x-forwarded-for", "x-real-ip"]) {
    for (const part of headers.get(name)?.split(",") ?? []) recordSecret("client address", part);
  }
  try {
    const u = new URL(url);
    recordFields(Object.fromEntries(u.searchParams));
  } catch {}
  recordBody(init?.body);
}

export async function recordResponse(res: Response): Promise<void> {
  if (!res.headers.get("content-type")?.includes("json")) return;
  try {
    recordFields(await res.clone().json());
  } catch {}
}
