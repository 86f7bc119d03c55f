// The pure DNI rules, without a database.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { attributionOf, eventOf, formatNumber, poolKeyOf, visitorOf } from "../src/dni/rules";
import { textField } from "../src/http/fields";

describe("identifiers", () => {
  test("visitor: letters, digits, _ and - kept, cut to 48; nothing left is no visitor", () => {
    expect(visitorOf("abc-DEF_123")).toBe("abc-DEF_123");
    expect(visitorOf("a b<script>c!é")).toBe("abscriptc");
    expect(visitorOf("x".repeat(60))).toBe("x".repeat(48));
    expect(visitorOf("!!-" + "y".repeat(50))).toBe("-" + "y".repeat(47));
    expect(visitorOf(12345)).toBe("12345");
    for (const bad of [undefined, null, "", "   ", "!!!", "éé", {}, [], ["a"], { v: "a" }]) {
      expect(visitorOf(bad)).toBeNull();
    }
  });

  test("visitor: property — the result is always empty-or-valid and never longer than 48", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        const v = visitorOf(s);
        if (v !== null) expect(v).toMatch(/^[A-Za-z0-9_-]{1,48}$/);
        else expect(s.replace(/[^A-Za-z0-9_-]/g, "")).toBe("");
      }),
    );
  });

  test("the fast paths for plain identifiers answer as the cleaning rules do", () => {
    const pool = (v: unknown) => {
      const s = textField(v);
      return s === null || s === "" || s.length > 48 ? null : s;
    };
    const visitor = (v: unknown) => {
      const s = textField(v);
      const kept = s === null ? "" : s.replace(/[^A-Za-z0-9_-]+/g, "").slice(0, 48);
      return kept === "" ? null : kept;
    };
    const ids = fc.oneof(fc.string({ maxLength: 60 }), fc.stringMatching(/^[ -~]{0,50}$/), fc.stringMatching(/^[\w-]{0,50}$/));
    fc.assert(
      fc.property(ids, (s) => {
        expect(poolKeyOf(s)).toBe(pool(s));
        expect(visitorOf(s)).toBe(visitor(s));
      }),
      { numRuns: 2000 },
    );
  });

  test("pool: up to 48 characters, else no pool", () => {
    expect(poolKeyOf("acme-site")).toBe("acme-site");
    expect(poolKeyOf("p".repeat(48))).toBe("p".repeat(48));
    expect(poolKeyOf("p".repeat(49))).toBeNull();
    for (const bad of [undefined, null, "", {}, []]) expect(poolKeyOf(bad)).toBeNull();
  });
});

describe("formatting", () => {
  test("US numbers as (512) 555-0101; anything else as given", () => {
    expect(formatNumber("5125550101")).toBe("(512) 555-0101");
    expect(formatNumber("15125550101")).toBe("(512) 555-0101");
    expect(formatNumber("")).toBe("");
    expect(formatNumber("555010")).toBe("555010");
    expect(formatNumber("442071234567")).toBe("442071234567");
  });

  test("property: a formatted 10-digit number keeps its digits in order", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{10}$/), (d) => {
        const f = formatNumber(d);
        expect(f).toMatch(/^\(\d{3}\) \d{3}-\d{4}$/);
        expect(f.replace(/\D/g, "")).toBe(d);
      }),
    );
  });
});

describe("attribution", () => {
  test("utm object, click ids, landing and referrer; flat utm_ fields as a fallback; junk ignored", () => {
    expect(attributionOf({ utm: { source: "google", medium: "cpc", campaign: "c", term: "t", content: "x" }, gclid: "G",
      gbraid: "GB", wbraid: "WB", fbclid: "FB", msclkid: 42, landing: "https://a.example/", referrer: "https://r.example/" })).toEqual({
      utm_source: "google", utm_medium: "cpc", utm_campaign: "c", utm_term: "t", utm_content: "x", gclid: "G",
      gbraid: "GB", wbraid: "WB", fbclid: "FB", msclkid: "42", landing: "https://a.example/", referrer: "https://r.example/",
    });
    expect(attributionOf({ fbclid: { a: 1 }, gbraid: ["x"], wbraid: null })).toMatchObject({ fbclid: "", gbraid: "", wbraid: "", msclkid: "" });
    expect(attributionOf({ fbclid: "f".repeat(3000) }).fbclid.length).toBe(500);
    expect(attributionOf({ utm_source: "bing", utm: { medium: "email" } })).toMatchObject({ utm_source: "bing", utm_medium: "email" });
    expect(attributionOf({ utm: "nope", gclid: { a: 1 }, landing: ["x"] })).toMatchObject({ utm_source: "", gclid: "", landing: "" });
    expect(attributionOf({ landing: "u".repeat(3000) }).landing.length).toBe(2000);
    expect(attributionOf({ utm: { source: "a\u0000b" } }).utm_source).toBe("ab");
  });
});

describe("events", () => {
  test("kinds pageview, form, custom; anything else is custom", () => {
    expect(eventOf({ kind: "pageview" }).kind).toBe("pageview");
    expect(eventOf({ kind: "form" }).kind).toBe("form");
    expect(eventOf({ kind: "custom" }).kind).toBe("custom");
    for (const k of ["click", "PAGEVIEW", "", undefined, 3, {}]) expect(eventOf({ kind: k }).kind).toBe("custom");
  });

  test("name cut to 80; value defaults to 0 and is 0 when not numeric", () => {
    expect(eventOf({ name: "n".repeat(100) }).name).toBe("n".repeat(80));
    expect(eventOf({}).name).toBe("");
    expect(eventOf({}).value).toBe(0);
    expect(eventOf({ value: 12.5 }).value).toBe(12.5);
    expect(eventOf({ value: "7.25" }).value).toBe(7.25);
    expect(eventOf({ value: "-3" }).value).toBe(-3);
    for (const v of ["abc", "1e999", "", null, {}, [1], true, Infinity, NaN, "0x10"]) expect(eventOf({ value: v }).value).toBe(0);
  });

  test("meta kept only as an object whose JSON is at most 4,000 bytes", () => {
    expect(eventOf({ meta: { a: 1 } }).meta).toBe('{"a":1}');
    // {"k":"…"} is 8 bytes of frame around the value.
    expect(eventOf({ meta: { k: "x".repeat(3992) } }).meta).not.toBeNull();
    expect(eventOf({ meta: { k: "x".repeat(3993) } }).meta).toBeNull();
    // Bytes, not characters: 1,330 three-byte characters plus the frame fit (3,998), 1,331 do not.
    expect(eventOf({ meta: { k: "€".repeat(1330) } }).meta).not.toBeNull();
    expect(eventOf({ meta: { k: "€".repeat(1331) } }).meta).toBeNull();
    for (const m of [null, "x", 1, [1, 2], undefined]) expect(eventOf({ meta: m }).meta).toBeNull();
    expect(JSON.parse(eventOf({ meta: { "a\u0000": "b\u0000", n: ["\ud800"] } }).meta!)).toEqual({ a: "b", n: ["\ufffd"] });
  });
});
