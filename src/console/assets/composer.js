// The composer's counter: an SMS's characters and segments as the carriers count them (GSM-7:
// 160 in one, 153 per part of a longer one; a character outside GSM-7 makes it UCS-2: 70, 67),
// with what one text costs the organization. Ctrl+Enter (⌘+Enter) sends. Without it the form works
// the same; the counter is only a help.
(function () {
  "use strict";
  function init() {
  var form = document.getElementById("composer");
  if (!form || form.getAttribute("data-ready") === "1") return;
  form.setAttribute("data-ready", "1");
  var body = form.querySelector("textarea[name=body]");
  var channel = form.querySelector("select[name=channel]");
  var out = document.getElementById("composer-count");
  if (!body || !channel || !out) return;
  var GSM = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
  var EXT = "^{}\\[~]|€\f";
  var initial = out.textContent;
  var cost = parseFloat(out.getAttribute("data-sms-cost") || "");

  function count(text) {
    var units = 0;
    var gsm = true;
    for (var i = 0; i < text.length; i++) {
      var ch = text.charAt(i);
      if (GSM.indexOf(ch) >= 0) units += 1;
      else if (EXT.indexOf(ch) >= 0) units += 2;
      else { gsm = false; break; }
    }
    if (!gsm) {
      units = 0;
      units = text.length; // UTF-16 code units, as carriers count UCS-2: an emoji is two
    }
    var single = gsm ? 160 : 70;
    var part = gsm ? 153 : 67;
    var segments = units === 0 ? 0 : units <= single ? 1 : Math.ceil(units / part);
    return { units: units, segments: segments, encoding: gsm ? "GSM-7" : "UCS-2", single: single, part: part };
  }

  function update() {
    if (channel.value !== "sms") {
      out.textContent = initial;
      return;
    }
    var c = count(body.value);
    var limit = c.segments <= 1 ? c.single : c.segments * c.part;
    var text = c.units + "/" + limit + " characters (" + c.encoding + ") · " + c.segments + " segment" + (c.segments === 1 ? "" : "s");
    if (!isNaN(cost)) text += " · " + cost + " credits per text";
    out.textContent = text;
  }

  body.addEventListener("input", update);
  channel.addEventListener("change", update);
  body.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      if (typeof form.requestSubmit === "function") form.requestSubmit();
      else form.submit();
    }
  });
  update();
  // Opened at the newest entry: the timeline scrolled to its end, the composer under it in view
  // (unless the address names a place on the page, such as the older entries).
  var tl = document.getElementById("pane-timeline");
  if (tl && tl.scrollHeight > tl.clientHeight) tl.scrollTop = tl.scrollHeight;
  if (!location.hash || location.hash === "#composer") form.scrollIntoView({ block: "end" });
  }
  init();
  // The inbox opens a conversation by swapping the pane (htmx): its composer is a new one.
  document.addEventListener("htmx:afterSettle", init);
})();
