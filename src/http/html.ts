// Text into HTML: the five characters that could open markup or leave an attribute value, so an
// escaped value is inert both between tags and inside a quoted attribute.
const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
