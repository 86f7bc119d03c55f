// Merge values: `{first_name}` and friends replaced in one pass (a value that itself contains
// `{last_name}` stays as typed). Into an email's HTML body they go HTML-escaped, since the body is
// HTML written by the sender but the values come from whoever filled in a lead form; into SMS
// and subjects (plain text, not markup) they go as they are.

import { escapeHtml } from "../http/html";

export interface MergeValues {
  first_name: string;
  last_name: string;
  company: string;
  phone: string;
  email: string;
  [name: string]: string;
}

export interface MergeSource {
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
  city?: string;
  state?: string;
  postal_code?: string;
}

/** The values a template may name. `{company}` is the org's company, else its name. */
export function mergeValues(lead: MergeSource, org: { company: string; name: string } | null): MergeValues {
  const first = lead.first_name;
  const last = lead.last_name;
  return {
    first_name: first,
    last_name: last,
    full_name: [first, last].filter((s) => s !== "").join(" "),
    company: org ? org.company || org.name : "",
    phone: lead.phone,
    email: lead.email,
    city: lead.city ?? "",
    state: lead.state ?? "",
    postal_code: lead.postal_code ?? "",
  };
}

const PLACEHOLDER = /\{([a-z_]+)\}/g;

/** The placeholder names a template holds, in order, each once (`{first_name}` → first_name). */
export function placeholdersIn(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1]))];
}

/** The names every lead's merge fills (mergeValues' keys): `{appointment_time}` and the like are an automation's extras. */
export const LEAD_MERGE_FIELDS: readonly string[] = Object.keys(mergeValues({ first_name: "", last_name: "", phone: "", email: "" }, null));

/** Replaces known placeholders; unknown ones (and other braces) are left as written. */
export function merge(template: string, values: MergeValues, escape: (s: string) => string = (s) => s): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(values, name) ? escape(values[name]) : whole));
}

// One escape for every HTML the server writes (the booking page uses it too).
export { escapeHtml };

export const DEFAULT_SUBJECT = "Message from {company}";

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

// Bounded quantifiers and one alternative per first character: linear on any input (`&#&#&#…`).
const ENTITY = /&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi;

function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(ENTITY, (whole, e: string) => {
    if (e[0] === "#") {
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[e.toLowerCase()] ?? whole;
  });
}

/** Elements dropped with their content. */
const RAW = new Set(["script", "style", "head"]);
/** Block ends that end a line. */
const BLOCK_END = new Set(["p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "tr", "table", "blockquote", "pre"]);
/** The end tag of a dropped element, searched from where its start tag ended (sticky-free, global). */
const RAW_END: Record<string, RegExp> = {
  script: /<\/script\s*>/gi,
  style: /<\/style\s*>/gi,
  head: /<\/head\s*>/gi,
};
const TAG_NAME = /^\/?([a-z][a-z0-9]*)/i;
const HREF = /(?:^|\s)href\s*=\s*(?:"([^"]*)"|'([^']*)')/i;

const isNameStart = (c: string) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z");

/** Where `re` next matches in `s` at or after `from`: [start, end], or null. One scan, never from 0 again. */
function findFrom(re: RegExp, s: string, from: number): [number, number] | null {
  re.lastIndex = from;
  const m = re.exec(s);
  return m ? [m.index, m.index + m[0].length] : null;
}

/**
 * A readable plain-text rendering of an HTML body: scripts and styles dropped, line breaks at
 * `<br>` and block ends, links as "text (url)", other tags removed, entities decoded, runs of
 * blank lines collapsed.
 *
 * One pass of a small tokenizer: every search for a tag's end, a comment's end or a dropped
 * element's end starts where the previous one stopped, and one that finds nothing ends the scan,
 * so the time is linear in the input whatever it holds (the regular expressions this replaced
 * took seconds on 60 KB of spaces or thousands of `<script`). An unterminated tag, comment,
 * script or style drops the rest of the input, as a browser would not show it either.
 */
export function htmlToText(html: string): string {
  const s = html;
  let out = "";
  // The open link: where its text starts in `out`, and its decoded href. Links do not nest (a
  // browser ends an open link at the next one's start), which also keeps each character of the
  // output inside at most one link's text, so comparing a link's text with its href stays linear.
  let link: { at: number; href: string } | null = null;
  const endLink = () => {
    if (link === null) return;
    const text = out.slice(link.at);
    if (link.href !== "" && text.trim() !== link.href.trim()) out += ` (${link.href})`;
    link = null;
  };
  let headUnclosed = false;
  let i = 0;
  while (i < s.length) {
    const lt = s.indexOf("<", i);
    if (lt === -1) {
      out += decodeEntities(s.slice(i));
      break;
    }
    if (lt > i) out += decodeEntities(s.slice(i, lt));
    const next = s[lt + 1] ?? "";
    if (s.startsWith("<!--", lt)) {
      const end = s.indexOf("-->", lt + 4);
      if (end === -1) break;
      i = end + 3;
      continue;
    }
    if (!(isNameStart(next) || next === "!" || next === "?" || (next === "/" && isNameStart(s[lt + 2] ?? "")))) {
      // Not markup: a literal "<".
      out += "<";
      i = lt + 1;
      continue;
    }
    const gt = s.indexOf(">", lt + 1);
    if (gt === -1) break;
    const inner = s.slice(lt + 1, gt);
    i = gt + 1;
    const m = TAG_NAME.exec(inner);
    if (!m) continue; // <!doctype …>, <?xml …?>
    const name = m[1].toLowerCase();
    const closing = inner[0] === "/";
    if (!closing && RAW.has(name)) {
      // An unclosed script or style swallows the rest, as in a browser; an unclosed head does
      // not (a browser ends it at the first content), so its tag alone is dropped. A search that
      // found no end tag is not made again: none can be found later either (`<head>` × 10,000).
      const end = headUnclosed && name === "head" ? null : findFrom(RAW_END[name], s, i);
      if (end === null) {
        if (name !== "head") break;
        headUnclosed = true;
        continue;
      }
      i = end[1];
      continue;
    }
    if (name === "br") out += "\n";
    else if (name === "li" && !closing) out += "\n- ";
    else if (closing && BLOCK_END.has(name)) out += "\n";
    else if (name === "a") {
      endLink();
      const h = closing ? null : HREF.exec(inner);
      if (h) link = { at: out.length, href: decodeEntities(h[1] ?? h[2]) };
    }
  }
  endLink();
  return tidyLines(out);
}

/** Line ends normalized, spaces and tabs before a line break dropped, runs of blank lines made one, trimmed: in one pass. */
function tidyLines(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const kept: string[] = [];
  let blank = 0;
  for (let n = 0; n < lines.length; n++) {
    let line = lines[n];
    // Only a line followed by a break loses its trailing blanks (the last one is trimmed below).
    if (n < lines.length - 1) {
      let e = line.length;
      while (e > 0 && (line[e - 1] === " " || line[e - 1] === "\t")) e--;
      line = line.slice(0, e);
    }
    if (line === "") {
      if (++blank > 1) continue;
    } else blank = 0;
    kept.push(line);
  }
  return kept.join("\n").trim();
}

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

/** An email's subject, HTML body and plain-text alternative from the sender's templates. */
export function renderEmail(body: string, subject: string | null, values: MergeValues): RenderedEmail {
  const subjectTemplate = subject === null || subject.trim() === "" ? DEFAULT_SUBJECT : subject;
  // A header is one line of text: merged plainly, line breaks folded to spaces.
  return emailOf(merge(subjectTemplate, values).replace(/[\r\n]+/g, " ").trim(), merge(body, values, escapeHtml));
}

/**
 * An email from its merged subject and HTML body, as a message row stores them: the plain-text
 * alternative is derived from the merged HTML (escaped values decode back to what was typed), so
 * an email sent later from its stored row is the one that would have gone at once.
 */
export const emailOf = (subject: string, html: string): RenderedEmail => ({ subject, html, text: htmlToText(html) });

/** An SMS body: merge values inserted as plain text. */
export const renderSms = (body: string, values: MergeValues): string => merge(body, values);
