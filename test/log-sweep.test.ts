// The log sweep's parts (test/harness/sweep.ts, src/log.ts's LOG_COPY_FILE): the scanner finds every
// kind of secret it is given and the shapes no line may hold, and passes what is known to be fine
// (hashes, sealed values, display prefixes, times); the copy receives every level.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { displayPrefix, generateKey, keyDigest } from "../src/auth/keys";
import { copyLogTo, log, setLogLevel, writeLines } from "../src/log";
import { seal } from "../src/secrets/seal";
import { capture } from "./harness/capture";
import { canonicalIp, scanLines, type Secret } from "./harness/sweep";

const key = generateKey();
const token = randomBytes(32).toString("base64url");
const twilio = "twilio-auth-" + randomBytes(8).toString("hex");
const smtpPass = "p@ss w0rd/" + randomBytes(4).toString("hex");
const secrets: Secret[] = [
  { kind: "api key", value: key },
  { kind: "booking token", value: token },
  { kind: "provider credential", value: twilio },
  { kind: "provider credential", value: smtpPass },
  { kind: "client address", value: "203.0.113.7" },
  { kind: "client address", value: canonicalIp("2001:db8::42")! },
];
const line = (fields: Record<string, unknown>) => JSON.stringify({ ts: "2026-11-25T17:37:50.123Z", level: "warn", msg: "m", ...fields });

describe("the scanner", () => {
  test("finds each recorded secret, inside other text too, and says which kind without the value", () => {
    const lines = [
      line({ key }),
      line({ error: `bad token ${token}.` }),
      line({ url: `https://ACx:${twilio}@api.twilio.example/` }),
      line({ error: `535 auth failed for smtp://u:${smtpPass}@mail` }),
      line({ client: "203.0.113.7" }),
      line({ peer: "[2001:0db8:0000::0042]:443" }),
    ];
    const found = scanLines(lines, secrets);
    expect(found.map((f) => [f.line, f.kind])).toEqual([
      [1, "api key (lk_ shape)"],
      [1, "api key"],
      [2, "booking token"],
      [3, "provider credential"],
      [4, "provider credential"],
      [5, "client address"],
      [6, "client address"],
    ]);
    for (const f of found) for (const s of secrets) if (s.kind !== "client address") expect(f.excerpt).not.toContain(s.value);
  });

  test("finds key and webhook-secret shapes nobody recorded", () => {
    const found = scanLines([line({ k: generateKey() }), line({ s: "whsec_" + randomBytes(24).toString("base64") })], []);
    expect(found.map((f) => f.kind)).toEqual(["api key (lk_ shape)", "webhook secret (whsec_ shape)"]);
  });

  test("passes hashes, sealed values, display prefixes, times and neighbouring addresses", () => {
    const lines = [
      line({ hash: keyDigest(key), hex: createHash("sha256").update(key).digest("hex"), prefix: displayPrefix(key) }),
      line({ client: createHmac("sha256", "salt").update("203.0.113.7").digest("hex"), token_hash: createHash("sha256").update(token).digest("base64url") }),
      line({ sealed: seal(randomBytes(32), twilio) }),
      line({ at: "17:37:50", other: "203.0.113.70", net: "2001:db8::4", v: "1.203.0.113.7" }),
    ];
    expect(scanLines(lines, secrets)).toEqual([]);
  });

  test("IPv6 addresses compare in any of their written forms", () => {
    const forms = ["2001:db8::42", "2001:DB8:0:0:0:0:0:42", "[2001:0db8::0042]", "2001:db8:0:0::42"];
    expect(new Set(forms.map(canonicalIp))).toEqual(new Set(["2001:db8:0:0:0:0:0:42"]));
    expect(canonicalIp("::ffff:203.0.113.7")).toBe("0:0:0:0:0:ffff:cb00:7107");
    expect(canonicalIp("::1")).toBe("0:0:0:0:0:0:0:1");
    expect([canonicalIp("not an address"), canonicalIp("999.1.1.1")]).toEqual([null, null]);
  });
});

describe("LOG_COPY_FILE", () => {
  const dir = mkdtempSync(join(tmpdir(), "leadline-copy-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("receives every level whatever LOG_LEVEL lets through to stdout, and the access log's lines", async () => {
    const path = join(dir, "copy.jsonl");
    const shown = await capture(async () => {
      const previous = copyLogTo(path);
      setLogLevel("warn");
      try {
        log.debug("d", { n: 1 });
        log.info("i");
        log.warn("w");
        writeLines('{"family":"x"}\n');
      } finally {
        copyLogTo(previous);
        setLogLevel("error");
      }
      return 0;
    });
    const copied = readFileSync(path, "utf8").trim().split("\n");
    expect(copied.map((l) => JSON.parse(l).msg ?? JSON.parse(l).family)).toEqual(["d", "i", "w", "x"]);
    expect(shown.out.trim().split("\n").map((l) => JSON.parse(l).msg ?? JSON.parse(l).family)).toEqual(["w", "x"]);
  });
});
