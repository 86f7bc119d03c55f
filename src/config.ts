// The only reader of process.env. Parsed and validated once, at start.

export type TrustProxy = "loopback" | "all" | "none";
export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Config {
  databaseUrl: string | null;
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, when DATABASE_URL is a transaction pooler (PgBouncer).
   * Set, the pool sends unprepared statements and carries no session state; LISTEN, migrations and
   * the CLI use this address (src/db/open.ts).
   */
  databaseDirectUrl: string | null;
  dataDir: string;
  /**
   * Where the embedded server's control socket goes when DATA_DIR's path is too long for a Unix
   * socket address: XDG_RUNTIME_DIR, else /tmp (a private 0700 directory is made inside).
   */
  runtimeDir: string;
  port: number;
  host: string;
  /** The public base address; BASE_URL, else the provisioned setting (applied at start), else localhost. */
  baseUrl: string;
  /** True when BASE_URL came from the environment (which wins over the provisioned setting). */
  baseUrlFromEnv: boolean;
  inboundListId: number | null;
  ipSalt: string | null;
  trustProxy: TrustProxy;
  logLevel: LogLevel;
  webhookAllowPrivate: boolean;
  poolMax: number | null;
  /** Visitors each instance keeps in its DNI lease cache (src/dni/engine.ts). */
  dniCacheSize: number;
  /** How long a request body may take to arrive (src/http/body.ts). */
  bodyDeadlineMs: number;
  /**
   * How long a send waits for Twilio or the SMTP server; null: the default, 10 s
   * (src/messages/twilio.ts). Not read from the environment: StartOptions.providerTimeoutMs sets it
   * (tests whose providers hang, so that they wait a second or for ever instead).
   */
  providerTimeoutMs: number | null;
  /**
   * The request deadline of every route (src/http/define.ts); null: the contract's, DEADLINE_MS
   * (1 s, src/db/deadline.ts). REQUEST_DEADLINE_MS, or StartOptions.deadlineMs in process, lengthens
   * it: for a host whose database is known to be slow, and for the tests' instances, whose answers
   * a machine busy with other work can delay past a second without anything being wrong (the
   * tests about the deadline keep the contract's).
   */
  deadlineMs: number | null;
  /** Days a DNI visitor, and the history of its holds, is kept after its last visit. */
  dniVisitorRetentionDays: number;
  /** Days a DNI browser event is kept. */
  dniEventRetentionDays: number;
  /** Live DNI holds one client address (an IPv6 /64) may have in one pool; its next new visitors get the fallback. */
  dniMaxHoldsPerAddress: number;
  /**
   * LEADLINE_SECRET_KEY: the AES-256 key that seals provider credentials and webhook secrets at
   * rest (src/secrets/); null stores them as given (serve warns once).
   */
  secretKey: Buffer | null;
  /** LEADLINE_SECRET_KEY_OLD: the key being replaced, read only by `leadline secrets rotate`. */
  secretKeyOld: Buffer | null;
  /** METRICS_TOKEN: the bearer token that lets a non-loopback peer read /metrics (src/metrics/route.ts). */
  metricsToken: string | null;
  /** ACCESS_LOG: one JSON line per request (src/metrics/access-log.ts), written when LOG_LEVEL is info or debug. */
  accessLog: boolean;
  /** LOG_COPY_FILE: a file every log line is appended to as well, at every level whatever LOG_LEVEL says (src/log.ts). */
  logCopyFile: string | null;
}

export class ConfigError extends Error {}

function intIn(name: string, raw: string | undefined, min: number, max: number): number | null {
  if (raw === undefined || raw.trim() === "") return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function oneOf<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], dflt: T): T {
  if (raw === undefined || raw === "") return dflt;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(", ")}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

/**
 * A base address without trailing slashes. A loop rather than \`/\/+$/\`, which tries again from
 * every slash (3 s on 64 KiB of them); base addresses come from settings and provisioning too.
 */
export function withoutTrailingSlashes(s: string): string {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 47) end--;
  return s.slice(0, end);
}

/** 32 bytes, as 64 hex digits or as base64 (padded or not, standard or URL alphabet). */
function aesKey(name: string, raw: string | undefined): Buffer | null {
  const v = raw?.trim() ?? "";
  if (v === "") return null;
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, "hex");
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(v)) {
    const key = Buffer.from(v.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (key.length === 32) return key;
  }
  // Never echo the value: it is (a mistyped) key.
  throw new ConfigError(`${name} must be 32 bytes as 64 hex digits or as base64 (openssl rand -base64 32)`);
}

/** An http(s) address without query or fragment: links are built by appending paths to it. */
export function publicUrl(name: string, raw: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "" || url.hash !== "" || url.username !== "") {
    throw new ConfigError(`${name} must be an http:// or https:// address without query, fragment or credentials, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

/**
 * An address or host name to listen on, by its form; whether a name resolves is checked when
 * serve starts (resolveHost), naming HOST either way.
 */
function hostName(raw: string): string {
  const ipv6 = raw.includes(":");
  const ok = ipv6 ? /^[0-9A-Fa-f:.]+$/.test(raw) : /^[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*$/.test(raw) && raw.length <= 253;
  if (!ok) throw new ConfigError(`HOST must be an IP address or a host name, got ${JSON.stringify(raw)}`);
  return raw;
}

/**
 * NPK_IP_SALT, refused while it is deploy/env.example's placeholder (`CHANGE_ME…`): every
 * installation that forgot to replace it would share one known salt, and a known salt lets anyone
 * holding the hashes (a backup, a log) recover each address by hashing all of IPv4.
 */
function ipSalt(raw: string | undefined): string | null {
  if (!raw) return null;
  // Never echo the value: it is a (mistyped) salt.
  if (raw.trim().startsWith("CHANGE_ME")) throw new ConfigError("NPK_IP_SALT is the example file's placeholder (CHANGE_ME…): set it to a long random string (openssl rand -hex 32)");
  return raw;
}

/** A token a scraper can send in a header: 16 to 256 printable characters without spaces. */
function metricsToken(raw: string | undefined): string | null {
  const v = raw?.trim() ?? "";
  if (v === "") return null;
  // Never echo the value: it is a secret.
  if (!/^[\x21-\x7e]{16,256}$/.test(v)) throw new ConfigError("METRICS_TOKEN must be 16 to 256 printable characters without spaces (openssl rand -hex 32)");
  return v;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const databaseUrl = env.DATABASE_URL?.trim() || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// URL");
  }
  const databaseDirectUrl = env.DATABASE_DIRECT_URL?.trim() || null;
  if (databaseDirectUrl && !/^postgres(ql)?:\/\//.test(databaseDirectUrl)) {
    throw new ConfigError("DATABASE_DIRECT_URL must be a postgres:// URL");
  }
  // Without DATABASE_URL the embedded database is used, and a pooler in front of it means nothing.
  if (databaseDirectUrl && !databaseUrl) throw new ConfigError("DATABASE_DIRECT_URL is set without DATABASE_URL (the pooler's address)");
  const port = intIn("PORT", env.PORT, 0, 65535) ?? 8080;
  const baseUrl = withoutTrailingSlashes(env.BASE_URL?.trim() ? publicUrl("BASE_URL", env.BASE_URL.trim()) : `http://localhost:${port}`);
  return {
    databaseUrl,
    databaseDirectUrl,
    dataDir: env.DATA_DIR?.trim() || "./leadline-data",
    runtimeDir: env.XDG_RUNTIME_DIR?.trim() || "/tmp",
    port,
    host: hostName(env.HOST?.trim() || "0.0.0.0"),
    baseUrl,
    baseUrlFromEnv: !!env.BASE_URL?.trim(),
    inboundListId: intIn("COMMS_INBOUND_LIST_ID", env.COMMS_INBOUND_LIST_ID, 1, Number.MAX_SAFE_INTEGER),
    ipSalt: ipSalt(env.NPK_IP_SALT),
    trustProxy: oneOf("TRUST_PROXY", env.TRUST_PROXY, ["loopback", "all", "none"] as const, "loopback"),
    logLevel: oneOf("LOG_LEVEL", env.LOG_LEVEL, ["debug", "info", "warn", "error"] as const, "info"),
    webhookAllowPrivate: oneOf("WEBHOOK_ALLOW_PRIVATE", env.WEBHOOK_ALLOW_PRIVATE, ["true", "false"] as const, "false") === "true",
    poolMax: intIn("DB_POOL_MAX", env.DB_POOL_MAX, 1, 200),
    dniCacheSize: intIn("DNI_CACHE_SIZE", env.DNI_CACHE_SIZE, 1, 10_000_000) ?? 100_000,
    bodyDeadlineMs: intIn("BODY_DEADLINE_MS", env.BODY_DEADLINE_MS, 100, 600_000) ?? 10_000,
    providerTimeoutMs: null,
    deadlineMs: intIn("REQUEST_DEADLINE_MS", env.REQUEST_DEADLINE_MS, 100, 60_000),
    dniVisitorRetentionDays: intIn("DNI_VISITOR_RETENTION_DAYS", env.DNI_VISITOR_RETENTION_DAYS, 1, 36_500) ?? 400,
    dniEventRetentionDays: intIn("DNI_EVENT_RETENTION_DAYS", env.DNI_EVENT_RETENTION_DAYS, 1, 36_500) ?? 90,
    dniMaxHoldsPerAddress: intIn("DNI_MAX_HOLDS_PER_ADDRESS", env.DNI_MAX_HOLDS_PER_ADDRESS, 1, 1_000_000) ?? 100,
    secretKey: aesKey("LEADLINE_SECRET_KEY", env.LEADLINE_SECRET_KEY),
    secretKeyOld: aesKey("LEADLINE_SECRET_KEY_OLD", env.LEADLINE_SECRET_KEY_OLD),
    metricsToken: metricsToken(env.METRICS_TOKEN),
    accessLog: oneOf("ACCESS_LOG", env.ACCESS_LOG, ["true", "false"] as const, "true") === "true",
    logCopyFile: env.LOG_COPY_FILE?.trim() || null,
  };
}
