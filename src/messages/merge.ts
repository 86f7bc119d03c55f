// Merge values: `{first_name}` and friends replaced in one pass (a value that itself contains
// `{last_name}` stays as typed). Into an email's HTML body they go HTML-escaped, since the body is
// HTML written by the sender but the values come from whoever filled in a lead form; into SMS
// and subjects (plain text, not markup) they go as they are.

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

/** Replaces known placeholders; unknown ones (and other braces) are left as written. */
export function merge(template: string, values: MergeValues, escape: (s: string) => string = (s) => s): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(values, name) ? escape(values[name]) : whole));
}

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

export const DEFAULT_SUBJECT = "Message from {company}";

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (whole, e: string) => {
    if (e[0] === "#") {
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[e.toLowerCase()] ?? whole;
  });
}

/**
 * A readable plain-text rendering of an HTML body: scripts and styles dropped, line breaks at
 * `<br>` and block ends, links as "text (url)", other tags removed, entities decoded, runs of
 * blank lines collapsed. Applied to the template before merging, so merge values arrive as typed.
 */
export function htmlToText(html: string): string {
  return decodeEntities(
    html
      .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, "")
      .replace(/<!--[\s\S]*?-->/g, "")
      .replace(/<a\b[^>]*?\bhref\s*=\s*["']([^"']*)["'][^>]*>([\s\S]*?)<\/a\s*>/gi, (_, href: string, text: string) =>
        text.trim() === href.trim() || href === "" ? text : `${text} (${href})`,
      )
      .replace(/<br\s*\/?>/gi, "\n")
      .replace(/<li\b[^>]*>/gi, "\n- ")
      .replace(/<\/(p|div|h[1-6]|ul|ol|tr|table|blockquote|pre)\s*>/gi, "\n")
      .replace(/<[^>]*>/g, "")
      .replace(/\r\n?/g, "\n"),
  )
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

/** An email's subject, HTML body and plain-text alternative from the sender's templates. */
export function renderEmail(body: string, subject: string | null, values: MergeValues): RenderedEmail {
  const subjectTemplate = subject === null || subject.trim() === "" ? DEFAULT_SUBJECT : subject;
  return {
    // A header is one line of text: merged plainly, line breaks folded to spaces.
    subject: merge(subjectTemplate, values).replace(/[\r\n]+/g, " ").trim(),
    html: merge(body, values, escapeHtml),
    text: merge(htmlToText(body), values),
  };
}

/** An SMS body: merge values inserted as plain text. */
export const renderSms = (body: string, values: MergeValues): string => merge(body, values);
