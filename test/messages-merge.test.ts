// Merge values, HTML escaping, the default subject and the plain-text alternative: pure.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { escapeHtml, htmlToText, merge, mergeValues, renderEmail, renderSms } from "../src/messages/merge";

const values = mergeValues(
  { first_name: "Dana <b>", last_name: "O'Hara & Sons", phone: "5125550001", email: "dana@example.com", state: "TX" },
  { company: "Acme \"Roofing\"", name: "Acme" },
);

describe("merge", () => {
  test("known placeholders are replaced, unknown ones and other braces stay", () => {
    expect(merge("Hi {first_name} {last_name} of {company}, call {phone} or {email}", values)).toBe(
      `Hi Dana <b> O'Hara & Sons of Acme "Roofing", call 5125550001 or dana@example.com`,
    );
    expect(merge("{unknown} {FIRST_NAME} { first_name } {} {{first_name}}", values)).toBe("{unknown} {FIRST_NAME} { first_name } {} {Dana <b>}");
    expect(merge("{__proto__}{constructor}{toString}", values)).toBe("{__proto__}{constructor}{toString}");
  });

  test("one pass: a value holding a placeholder is not merged again", () => {
    const v = mergeValues({ first_name: "{last_name}", last_name: "X", phone: "", email: "" }, null);
    expect(merge("{first_name}", v)).toBe("{last_name}");
  });

  test("company falls back to the org's name, and is empty without an org", () => {
    expect(mergeValues({ first_name: "", last_name: "", phone: "", email: "" }, { company: "", name: "Acme" }).company).toBe("Acme");
    expect(mergeValues({ first_name: "", last_name: "", phone: "", email: "" }, null).company).toBe("");
  });

  test("SMS gets values as plain text", () => {
    expect(renderSms("Hi {first_name}!", values)).toBe("Hi Dana <b>!");
  });

  test("email: values HTML-escaped into the body, the author's markup kept", () => {
    const mail = renderEmail("<p>Hi <b>{first_name}</b> {last_name}</p><p>{company}</p>", "Hello {first_name}", values);
    expect(mail.html).toBe("<p>Hi <b>Dana &lt;b&gt;</b> O&#39;Hara &amp; Sons</p><p>Acme &quot;Roofing&quot;</p>");
    // The subject is a header, not HTML: plain values.
    expect(mail.subject).toBe("Hello Dana <b>");
    expect(mail.text).toBe(`Hi Dana <b> O'Hara & Sons\nAcme "Roofing"`);
  });

  test("the subject defaults to 'Message from {company}'; line breaks cannot reach the header", () => {
    expect(renderEmail("x", null, values).subject).toBe('Message from Acme "Roofing"');
    expect(renderEmail("x", "  ", values).subject).toBe('Message from Acme "Roofing"');
    const evil = mergeValues({ first_name: "a\r\nBcc: victim@example.com", last_name: "", phone: "", email: "" }, null);
    expect(renderEmail("x", "Hi {first_name}", evil).subject).toBe("Hi a Bcc: victim@example.com");
  });

  test("plain-text alternative: tags out, breaks in, links kept, entities decoded, scripts dropped", () => {
    expect(
      htmlToText(
        '<html><head><style>p{}</style></head><body><h1>Offer</h1><p>Line&nbsp;one<br>line two &amp; more</p>' +
          '<ul><li>a</li><li>b</li></ul><a href="https://acme.example/x">our site</a><script>alert(1)</script>' +
          "<!-- note --> &lt;not a tag&gt; &#8364; &#x1F600;</body></html>",
      ),
    ).toBe("Offer\nLine one\nline two & more\n\n- a\n- b\nour site (https://acme.example/x) <not a tag> € 😀");
    expect(htmlToText("plain text, no markup")).toBe("plain text, no markup");
  });

  test("plain-text alternative: odd markup", () => {
    // A lone "<" is text; tags of any case; links do not nest; entities in hrefs are decoded.
    expect(htmlToText("1 < 2 and <B>bold</B> <A HREF='https://a.example/?x=1&amp;y=2'>go</a>")).toBe("1 < 2 and bold go (https://a.example/?x=1&y=2)");
    expect(htmlToText('<a href="u1">one <a href="u2">two</a>')).toBe("one  (u1)two (u2)");
    expect(htmlToText('<a href="https://x.example"> https://x.example </a>')).toBe("https://x.example");
    // Unterminated: a comment, a tag, a script or style drop the rest; an unclosed head only its tag.
    expect(htmlToText("kept <!-- gone")).toBe("kept");
    expect(htmlToText("kept <p class='x' gone")).toBe("kept");
    expect(htmlToText("kept <script>gone")).toBe("kept");
    expect(htmlToText("<head><title>T</title><p>Body</p>")).toBe("TBody");
    // Trailing blanks before a break go; at most one blank line; CR LF is a break.
    expect(htmlToText("a \t\r\n\r\n\r\n\r\nb  ")).toBe("a\n\nb");
  });

  test("property: an escaped value never contains markup characters", () => {
    fc.assert(fc.property(fc.string(), (s) => !/[<>"']/.test(escapeHtml(s)) && !/&(?!amp;|lt;|gt;|quot;|#39;)/.test(escapeHtml(s))));
  });

  test("property: whatever a lead typed, the HTML body has no tag the author did not write", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (first, last) => {
        const v = mergeValues({ first_name: first, last_name: last, phone: "", email: "" }, null);
        const html = renderEmail("<p>{first_name} {last_name}</p>", null, v).html;
        return (html.match(/</g) ?? []).length === 2;
      }),
    );
  });
});
