// NPK_IP_SALT (issue 27 §10): the example file's placeholder is refused at start, and client
// addresses are stored as HMAC-SHA-256 keyed by the salt (the served app's stored hashes are
// checked against node:crypto's HMAC in dni-api, client-address and metrics tests too).
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfig } from "../src/config";
import { hashedAddress } from "../src/http/client";
import { built, Exe } from "./harness/exe";

const hmac = (salt: string, text: string) => createHmac("sha256", salt).update(text).digest("hex");
const EXAMPLE = readFileSync(join(import.meta.dir, "../deploy/env.example"), "utf8");
const placeholder = /^NPK_IP_SALT=(.*)$/m.exec(EXAMPLE)![1];

describe("the address hash", () => {
  test("is HMAC-SHA-256 keyed by the salt, the bucket's too, and follows a change of salt", () => {
    const v4 = { address: "203.0.113.9", bucket: "203.0.113.9" };
    const v6 = { address: "2001:db8:1:2::7", bucket: "2001:db8:1:2::/64" };
    for (const salt of ["first salt", "", "sälτ 😀", "first salt"]) {
      const a = hashedAddress(salt, v4);
      expect([salt, a.hash, a.bucket.hash]).toEqual([salt, hmac(salt, "203.0.113.9"), hmac(salt, "203.0.113.9")]);
      const b = hashedAddress(salt, v6);
      expect([salt, b.hash, b.bucket.hash]).toEqual([salt, hmac(salt, "2001:db8:1:2::7"), hmac(salt, "2001:db8:1:2::/64")]);
      // Asked again: the cached record, the same hash.
      expect(hashedAddress(salt, v4).hash).toBe(a.hash);
    }
  });
});

describe("the example file's placeholder", () => {
  test("deploy/env.example still holds a CHANGE_ME placeholder for NPK_IP_SALT (what the refusal is for)", () => {
    expect(placeholder).toStartWith("CHANGE_ME");
  });

  test("loadConfig refuses any value starting CHANGE_ME, naming the variable and never echoing the value", () => {
    for (const value of [placeholder, "CHANGE_ME", " CHANGE_ME_TOO", "CHANGE_ME-later"]) {
      let error: unknown;
      try {
        loadConfig({ NPK_IP_SALT: value });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toStartWith("NPK_IP_SALT is the example file's placeholder");
      // (The message names the prefix, CHANGE_ME, and nothing after it.)
      if (value.trim() !== "CHANGE_ME") expect((error as Error).message).not.toContain(value.trim());
    }
    for (const value of ["a2f1c9e0d4b7", "my CHANGE_ME salt", "change_me_lower"]) expect(loadConfig({ NPK_IP_SALT: value }).ipSalt).toBe(value);
    expect(loadConfig({}).ipSalt).toBeNull();
  });

  test.skipIf(!built)("serve started with the example file's value exits 1 with one line naming NPK_IP_SALT", async () => {
    const exe = new Exe();
    try {
      const r = await exe.run(["serve"], { NPK_IP_SALT: placeholder, DATA_DIR: join(exe.dir, "data"), PORT: "0", HOST: "127.0.0.1" });
      expect(r).toEqual({
        code: 1,
        out: "",
        err: "leadline: NPK_IP_SALT is the example file's placeholder (CHANGE_ME…): set it to a long random string (openssl rand -hex 32)\n",
      });
    } finally {
      exe.cleanup();
    }
  });
});
