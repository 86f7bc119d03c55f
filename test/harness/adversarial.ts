// Adversarial inputs of 64 KiB and every transformation of request-supplied text, for the
// linear-time test (test/text-linear.test.ts) and its bench (bench/text.ts). The inputs are the
// shapes that make a backtracking pattern or a restarting search go quadratic: long runs of one
// character that a pattern can split in many ways, openers without closers, repeats of a prefix.
import { cleanText, cut, emailField, idField, isNumericText, textField, truthy } from "../../src/http/fields";
import { withoutTrailingSlashes } from "../../src/config";
import { parseLeadInput } from "../../src/leads/model";
import { dialable, digitsOf, phone10 } from "../../src/leads/phone";
import { attributionOf, eventOf, formatNumber, poolKeyOf, userAgentOf, visitorOf } from "../../src/dni/rules";
import { parsePoint } from "../../src/kpi/model";
import { personOf, slugOf, splitName, tokenOf, epochOf } from "../../src/booking/model";
import { parseCallReport } from "../../src/calls/model";
import { escapeHtml, htmlToText, merge, mergeValues, renderEmail, renderSms } from "../../src/messages/merge";
import { parseSendInput } from "../../src/messages/model";
import { e164, oneLine } from "../../src/messages/twilio";
import { keywordConsent } from "../../src/messages/callbacks";
import { parseHHMM, stateZone } from "../../src/messages/quiet-hours";
import { forbiddenAddress } from "../../src/events/address";

export const SIZE = 64 * 1024;

/** `head`, then `unit` repeated, then `tail` (which makes a pattern fail at the very end): exactly `size` characters. */
const fill = (unit: string, tail = "", head = "", size = SIZE) =>
  head + unit.repeat(Math.ceil(size / unit.length)).slice(0, size - head.length - tail.length) + tail;

/** The adversarial inputs at `size` characters each (the test compares two sizes; the bench uses SIZE). */
export const inputsOf = (size: number): Record<string, string> => {
  const f = (unit: string, tail = "", head = "") => fill(unit, tail, head, size);
  return {
    spaces: f(" "),
    "spaces then x": f(" ", "x"),
    "spaces and tabs": f(" \t", "x"),
    newlines: f("\n"),
    "CR LF and spaces": f("\r\n \r"),
    "<script repeats": f("<script"),
    "<script> unclosed": f("<script>"),
    "</style  unclosed": f("</style ", "", "<style>"),
    "< repeats": f("<"),
    "<a repeats": f("<a"),
    "<a href= unclosed": f(' href="', "", "<a"),
    "<head> unclosed": f("<head>"),
    "<head> then text": f("<head>x"),
    "nested links": f('<a href="https://x.example/">'),
    "nested tags": f("<b><i>"),
    "unterminated comment": f("<!--"),
    "{ repeats": f("{"),
    "{first_name repeats": f("{first_name"),
    "{ then letters": f("a", "!", "{"),
    "&# repeats": f("&#"),
    "&#x1 repeats": f("&#x1"),
    digits: f("1"),
    "digits then x": f("1", "x"),
    "digits dot digits then x": f("1", "x").replace(/^(.{100})1/, "$1."),
    "spaces digit spaces x": f(" ", "x", " ".repeat(size / 2) + "1"),
    slashes: f("/", "x"),
    "dots and hyphens": f("a.-", "!"),
    "a@a. repeats": f("a.", "!", "a@"),
    "utm-like value": f("utm_source=google&utm_medium=cpc%20%20&"),
    "percent signs": f("%"),
    "printable then control": f(" ", "\u0001", "a"),
    "surrogate halves": f("\ud800"),
    "NUL repeats": f("\u0000a"),
    "mixed markup": f('<p class="x">Hi {first_name} &amp; <br/><li>'),
  };
};

export const INPUTS: Record<string, string> = inputsOf(SIZE);

const values = mergeValues({ first_name: "Dana", last_name: "Lee", phone: "5125550001", email: "d@example.com" }, { company: "Acme", name: "Acme" });

/** Every transformation of request-supplied text, each given the whole input where it could arrive. */
export const TRANSFORMS: Record<string, (s: string) => unknown> = {
  "merge (SMS)": (s) => renderSms(s, values),
  "merge (values)": (s) => merge("{first_name} {last_name}", mergeValues({ first_name: s, last_name: s, phone: s, email: s }, { company: s, name: s })),
  "email (subject, HTML, text)": (s) => renderEmail(s, s, values),
  "HTML to text": htmlToText,
  "HTML escape": escapeHtml,
  "phone digits": (s) => [digitsOf(s), phone10(s), dialable(s), e164(s)],
  "text fields": (s) => [cleanText(s), textField(s), cut(s, 60), truthy(s), oneLine(s)],
  "id and number fields": (s) => [idField(s), isNumericText(s), epochOf(s)],
  "email field": emailField,
  "lead intake": (s) =>
    parseLeadInput({ phone: `5125550001${s}`, first_name: s, last_name: s, email: s, state: s, city: s, list_id: s, hopper: s, consent: s, source: s }),
  "DNI rules": (s) => [
    poolKeyOf(s),
    visitorOf(s),
    formatNumber(s),
    userAgentOf(s),
    attributionOf({ utm: { source: s, medium: s, campaign: s, term: s, content: s }, gclid: s, landing: s, referrer: s }),
    eventOf({ kind: s, name: s, value: s, meta: { [s.slice(0, 100)]: s } }),
  ],
  "KPI point": (s) => [parsePoint({ metric_key: s, value: s, day: s, dim_key: s, org_id: s }, 0, s), parsePoint({ metric_key: "k", value: s }, 0, null)],
  "booking fields": (s) => [slugOf({ s, slug: s }), tokenOf({ token: s, t: s }), personOf({ name: s, phone: s, email: s }), splitName(s)],
  "call report": (s) => parseCallReport({ phone: s, secs: s, status: s, disposition: s, notes: s, agent: s, lead_id: s }, 0),
  "message input": (s) => parseSendInput({ operation_id: s, channel: "sms", body: s, subject: s, lead_id: s }),
  "SMS keywords": keywordConsent,
  "quiet hours fields": (s) => [stateZone(s), parseHHMM(s)],
  "base address": withoutTrailingSlashes,
  "webhook address": (s) => [forbiddenAddress(s), forbiddenAddress(`[${s}]`), forbiddenAddress(`fe80::1%${s}`)],
};

/** Runs `fn(input)` and returns how long it took in ms; an exception is a refusal, which is fine. */
export function timeOne(fn: (s: string) => unknown, input: string): number {
  const t = performance.now();
  try {
    fn(input);
  } catch {
    // refusals (invalid_input …) are answers too; only the time matters here
  }
  return performance.now() - t;
}

/**
 * The CPU time (ms) this process spent on `fn(input)`, not the time that passed: beside other work
 * a run longer than the scheduler's slice is preempted almost every time and a short one almost
 * never, so wall times of 8 and 64 KiB differ by that share too (seen: a linear 4 ms on 64 KiB
 * timed 16 ms against 0.7 ms on 8 KiB, "24 times", beside four busy processes).
 */
export function cpuTimeOne(fn: (s: string) => unknown, input: string): number {
  const t = process.cpuUsage();
  try {
    fn(input);
  } catch {
    // refusals are answers too
  }
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

/** For each transformation: the slowest input and its time (ms), best of `runs` per input. */
export function worstCases(runs = 1): { transform: string; input: string; ms: number }[] {
  return Object.entries(TRANSFORMS).map(([transform, fn]) => {
    let worst = { input: "", ms: -1 };
    for (const [input, text] of Object.entries(INPUTS)) {
      let ms = Infinity;
      for (let r = 0; r < runs; r++) ms = Math.min(ms, timeOne(fn, text));
      if (ms > worst.ms) worst = { input, ms };
    }
    return { transform, ...worst };
  });
}
