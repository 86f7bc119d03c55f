// The text shown under a lead found by one of its messages: the message around its first match.
// Display only: which messages match is the database's decision (full-text, sql/0026); this finds
// where, folding in JavaScript the way leadline_fold does for Latin letters (a letter it folds
// otherwise is merely not highlighted: the snippet then starts at the beginning).
import { htmlToText } from "../messages/merge";

/** Characters shown, about: a line of a result list. */
export const SNIPPET_CHARS = 160;
const BEFORE = 40;

/** Lowercase, without diacritics, one code unit per code unit of `s` (so positions carry over). */
function foldForDisplay(s: string): string {
  let out = "";
  for (const ch of s) {
    const base = ch.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
    out += base.length === ch.length ? base : ch.toLowerCase().length === ch.length ? ch.toLowerCase() : ch;
  }
  return out;
}

/**
 * The message's text (an email's HTML as plain text, after its subject) with blanks made single,
 * cut to SNIPPET_CHARS around the first place a word of `tokens` starts; … marks a cut.
 */
export function snippetOf(channel: string, subject: string, body: string, tokens: string[]): string {
  const plain = channel === "email" ? [subject, htmlToText(body)].filter((s) => s !== "").join(" — ") : body;
  const text = plain.replace(/\s+/g, " ").trim();
  const folded = foldForDisplay(text);
  let at = -1;
  for (const token of tokens.map(foldForDisplay)) {
    const re = new RegExp(`(?<![\\p{L}\\p{N}])${token.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`, "u");
    const m = re.exec(folded);
    if (m && (at === -1 || m.index < at)) at = m.index;
  }
  let start = at <= BEFORE ? 0 : at - BEFORE;
  // Start at a word's beginning when one is near.
  if (start > 0) {
    const space = text.indexOf(" ", start);
    if (space !== -1 && space < at) start = space + 1;
  }
  let end = Math.min(text.length, start + SNIPPET_CHARS);
  if (end < text.length) {
    const space = text.lastIndexOf(" ", end);
    if (space > Math.max(at, start)) end = space;
  }
  // Never split a surrogate pair.
  if (start > 0 && /[\uDC00-\uDFFF]/.test(text[start] ?? "")) start--;
  if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1] ?? "")) end++;
  return `${start > 0 ? "…" : ""}${text.slice(start, end)}${end < text.length ? "…" : ""}`;
}

/** A piece of a snippet: text, and whether a searched word starts there (shown highlighted). */
export interface SnippetPart {
  text: string;
  hit: boolean;
}

/**
 * `text` cut into pieces at every place a word of `tokens` starts (folded as snippetOf folds, so
 * "jose" marks "José"), for the results page to highlight; display only, like snippetOf.
 */
export function highlightParts(text: string, tokens: string[]): SnippetPart[] {
  const folded = foldForDisplay(text);
  const words = tokens.map(foldForDisplay).filter((t) => t !== "");
  if (words.length === 0) return [{ text, hit: false }];
  const alternatives = words.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).sort((a, b) => b.length - a.length).join("|");
  const re = new RegExp(`(?<![\\p{L}\\p{N}])(?:${alternatives})`, "gu");
  const parts: SnippetPart[] = [];
  let from = 0;
  for (const m of folded.matchAll(re)) {
    if (m[0].length === 0) continue;
    if (m.index > from) parts.push({ text: text.slice(from, m.index), hit: false });
    parts.push({ text: text.slice(m.index, m.index + m[0].length), hit: true });
    from = m.index + m[0].length;
  }
  if (from < text.length) parts.push({ text: text.slice(from), hit: false });
  return parts;
}
