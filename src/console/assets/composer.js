// The composer's counter: an SMS's characters and segments as the carriers count them (GSM-7:
// 160 in one, 153 per part of a longer one; a character outside GSM-7 makes it UCS-2: 70, 67),
// with what one text costs the organization. Ctrl+Enter (⌘+Enter) sends. The saved-reply picker
// (`/`). Without it the form works the same; the counter and the picker are only a help.
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
  replies(form, body, channel);
  // Opened at the newest entry: the timeline scrolled to its end, the composer under it in view
  // (unless the address names a place on the page, such as the older entries).
  var tl = document.getElementById("pane-timeline");
  if (tl && tl.scrollHeight > tl.clientHeight) tl.scrollTop = tl.scrollHeight;
  if (!location.hash || location.hash === "#composer") form.scrollIntoView({ block: "end" });
  }
  // Saved replies (composer.ts): the menu's links become a filter box over a list, the combobox
  // pattern (the box holds the focus, the list's active option is its aria-activedescendant).
  // Typing filters by name, only the replies for the chosen channel; arrows and Enter pick, Escape
  // closes and goes back to the message; `/` in an empty composer opens it. A pick asks the
  // declared preview route for the reply merged for this lead by the send path's own merge and
  // puts it in the box (an email's subject too); without an answer the menu's link does it.
  function replies(form, body, channel) {
    var menu = document.getElementById("composer-replies");
    var links = document.getElementById("replies-links");
    var src = body.getAttribute("data-replies");
    var subject = form.querySelector("input[name=subject]");
    if (!menu || !links || !src) return;
    var items = Array.prototype.map.call(links.querySelectorAll("li"), function (li) {
      return {
        id: li.getAttribute("data-id"),
        name: li.getAttribute("data-name") || "",
        channels: (li.getAttribute("data-channels") || "").split(" "),
        href: li.querySelector("a").getAttribute("href"),
      };
    });
    var box = document.createElement("div");
    box.className = "replies-picker";
    var label = document.createElement("label");
    label.htmlFor = "replies-filter";
    label.textContent = "Find a saved reply";
    var input = document.createElement("input");
    input.id = "replies-filter";
    input.type = "text";
    input.autocomplete = "off";
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-expanded", "true");
    input.setAttribute("aria-controls", "replies-list");
    input.setAttribute("aria-autocomplete", "list");
    var list = document.createElement("ul");
    list.id = "replies-list";
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Saved replies");
    var status = document.createElement("p");
    status.className = "muted replies-status";
    status.setAttribute("aria-live", "polite");
    box.appendChild(label);
    box.appendChild(input);
    box.appendChild(list);
    box.appendChild(status);
    links.hidden = true;
    links.parentNode.insertBefore(box, links);
    var shown = [];
    var active = 0;

    function mark() {
      Array.prototype.forEach.call(list.children, function (li, i) {
        li.setAttribute("aria-selected", i === active ? "true" : "false");
        if (i === active) li.scrollIntoView({ block: "nearest" });
      });
      if (shown[active]) input.setAttribute("aria-activedescendant", "reply-opt-" + shown[active].id);
      else input.removeAttribute("aria-activedescendant");
    }
    function render() {
      var q = input.value.trim().toLowerCase();
      shown = items.filter(function (it) {
        return it.channels.indexOf(channel.value) >= 0 && it.name.toLowerCase().indexOf(q) >= 0;
      });
      if (active >= shown.length) active = Math.max(0, shown.length - 1);
      list.textContent = "";
      shown.forEach(function (it) {
        var li = document.createElement("li");
        li.id = "reply-opt-" + it.id;
        li.setAttribute("role", "option");
        li.textContent = it.name;
        li.addEventListener("mousedown", function (e) {
          e.preventDefault();
          pick(it);
        });
        list.appendChild(li);
      });
      status.textContent = shown.length === 0 ? "No saved reply for this channel matches." : "";
      mark();
    }
    function open() {
      menu.open = true;
      input.value = "";
      active = 0;
      render();
      input.focus();
    }
    function close() {
      menu.open = false;
      body.focus();
    }
    function pick(it) {
      status.textContent = "Filling in “" + it.name + "”…";
      fetch(src + "?reply=" + encodeURIComponent(it.id) + "&channel=" + encodeURIComponent(channel.value), {
        credentials: "same-origin",
        headers: { accept: "application/json" },
      })
        .then(function (r) {
          return r.ok ? r.json() : null;
        })
        .then(function (a) {
          if (!a || a.ok !== true) {
            status.textContent = "That reply cannot be used on this channel.";
            return;
          }
          body.value = a.body;
          if (a.channel === "email" && subject) subject.value = a.subject;
          body.dispatchEvent(new Event("input"));
          status.textContent = "";
          close();
          body.setSelectionRange(body.value.length, body.value.length);
        })
        .catch(function () {
          location.href = it.href;
        });
    }
    input.addEventListener("input", function () {
      active = 0;
      render();
    });
    input.addEventListener("keydown", function (e) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        if (shown.length) active = (active + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
        mark();
      } else if (e.key === "Enter") {
        if (shown[active]) pick(shown[active]);
      } else return;
      e.preventDefault();
      e.stopPropagation();
    });
    // Escape anywhere in the open menu (its button too, before the toggle has moved the focus).
    menu.addEventListener("keydown", function (e) {
      if (e.key !== "Escape" || !menu.open) return;
      e.preventDefault();
      e.stopPropagation();
      close();
    });
    menu.addEventListener("toggle", function () {
      // Opened from its button (or the inbox's `/` key): from the top of the whole list.
      if (menu.open && document.activeElement !== input) open();
    });
    channel.addEventListener("change", render);
    body.addEventListener("keydown", function (e) {
      if (e.key === "/" && body.value.trim() === "" && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        open();
      }
    });
  }
  init();
  // The inbox opens a conversation by swapping the pane (htmx): its composer is a new one.
  document.addEventListener("htmx:afterSettle", init);
})();
