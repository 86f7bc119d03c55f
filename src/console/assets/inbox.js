// The inbox, live and kind to the keyboard. Everything here is an enhancement: without it every
// action is a plain form and every conversation a link.
// - Live: htmx's SSE extension holds one stream per tab (/console/inbox/stream, on #inbox-live);
//   each `change` (on #inbox-changes) makes #inbox-refresh fetch this page again and swap in the
//   counts, the list, the open conversation's timeline and status, the navigation's count and the
//   tab's title. At most one refresh starts per 300 ms, and a change that comes within that gap
//   gets one at its end: every change is followed by a refresh asked after it arrived (htmx's own
//   `throttle:` would drop it, and the refresh already on its way may have read the page before
//   that change: the tab showed it only at the next change or the 10 s refresh).
//   The stream's address follows the last event id, so a stream htmx recreates resumes there
//   (a browser's own reconnection sends Last-Event-ID). `reset`: the page reloads. #inbox-refresh
//   also fetches every 10 s, so a stream a proxy holds back or drops unseen costs at most that.
//   `signed-out`: the session ended; the tab goes to sign-in (next: this page).
// - The open conversation's timeline is merged, never replaced: the refresh's #timeline holds the
//   newest entries, and the reader may have loaded older ones above them (older.js), possibly with
//   an older page still on its way into this very list. Each fresh entry already shown (its id:
//   msg-, call-, event-<id>) is updated in place when it changed (sent → delivered); each new one
//   goes where its key (the merged order, <µs>.<src>.<id>) puts it — after the newest shown, or
//   between two shown for an entry recorded late with an earlier time. One older than everything
//   shown is left to the older link, whose page will hold it (so nothing shows twice). A reader who
//   is not at the bottom stays on the entry they were reading.
// - Keys: j/k move, Enter opens, r reply, e close, a assign to me, s snooze, / saved replies, ? this sheet; Escape
//   closes it. Not while typing (Escape leaves the field; Ctrl+Enter sends from the composer: composer.js).
(function () {
  "use strict";
  var live = document.getElementById("inbox-live");
  var changes = document.getElementById("inbox-changes");
  var REFRESH_GAP_MS = 300;

  if (live && changes) {
    live.addEventListener("htmx:sseMessage", function (e) {
      var id = e.detail && e.detail.lastEventId;
      if (id && /^\d+$/.test(id)) live.setAttribute("sse-connect", "/console/inbox/stream?after=" + id);
    });
    changes.addEventListener("sse:reset", function () {
      location.reload();
    });
    // The refresher is looked up each time: opening a conversation swaps it for a new one.
    var lastAsked = 0;
    var trailing = null;
    var askRefresh = function () {
      trailing = null;
      lastAsked = Date.now();
      var r = document.getElementById("inbox-refresh");
      if (r) htmx.trigger(r, "inbox:refresh");
    };
    changes.addEventListener("sse:change", function () {
      if (trailing !== null) return; // a refresh is already due after this change
      var wait = lastAsked + REFRESH_GAP_MS - Date.now();
      if (wait <= 0) askRefresh();
      else trailing = setTimeout(askRefresh, wait);
    });
    // The session ended (signed out in another tab, expired, revoked): the stream says so in an
    // event rather than being refused (which the extension would retry forever). This stream is
    // closed and the tab goes to sign-in, back to this page afterwards.
    var told = typeof WeakSet === "function" ? new WeakSet() : null;
    live.addEventListener("htmx:sseOpen", function (e) {
      var source = e.detail && e.detail.source;
      // A source the browser reconnected opens again: it is listened to once.
      if (!source || (told && told.has(source))) return;
      if (told) told.add(source);
      source.addEventListener("signed-out", function (ev) {
        source.close();
        var here = location.pathname + location.search;
        var to = "/console/login?next=" + encodeURIComponent(here);
        if (here.indexOf("/console/") !== 0) {
          try {
            to = JSON.parse(ev.data).location || to;
          } catch (err) {}
        }
        location.assign(to);
      });
    });
    document.addEventListener("htmx:oobBeforeSwap", function (e) {
      var list = e.detail && e.detail.target;
      if (!list || list.id !== "timeline" || !document.getElementById("pane-timeline")) return;
      var fresh = e.detail.fragment && e.detail.fragment.querySelector ? e.detail.fragment.querySelector("#timeline") : null;
      // Another lead's timeline (the pane moved on): htmx swaps it as usual.
      if (!fresh || fresh.getAttribute("data-src") !== list.getAttribute("data-src")) return;
      e.detail.shouldSwap = false;
      mergeTimeline(list, fresh);
    });
    document.body.addEventListener("htmx:afterSettle", function () {
      var list = document.getElementById("conv-list");
      if (list && list.getAttribute("data-title")) document.title = list.getAttribute("data-title");
      restoreCurrent();
      var tl = document.getElementById("pane-timeline");
      if (tl && tl.getAttribute("data-at-end") !== "no") tl.scrollTop = tl.scrollHeight;
    });
    document.addEventListener(
      "scroll",
      function (e) {
        var tl = document.getElementById("pane-timeline");
        if (e.target === tl) tl.setAttribute("data-at-end", tl.scrollTop + tl.clientHeight >= tl.scrollHeight - 24 ? "yes" : "no");
      },
      true,
    );
  }

  /** An entry's key as numbers [µs, src, id], or null (an entry drawn without one). */
  function keyOf(li) {
    var k = /^(-?\d+)\.(\d)\.(\d+)$/.exec(li.getAttribute("data-key") || "");
    return k ? [Number(k[1]), Number(k[2]), Number(k[3])] : null;
  }
  function earlier(a, b) {
    for (var i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i];
    return false;
  }
  function scrollerOf(el) {
    for (var n = el.parentElement; n && n !== document.body; n = n.parentElement) {
      var style = getComputedStyle(n);
      if ((style.overflowY === "auto" || style.overflowY === "scroll") && n.scrollHeight > n.clientHeight) return n;
    }
    return document.scrollingElement || document.documentElement;
  }

  function mergeTimeline(list, fresh) {
    var pane = document.getElementById("pane-timeline");
    var reading = pane && pane.getAttribute("data-at-end") === "no";
    // The entry at the top of what the reader sees, and where it is: put back after the merge.
    var scroller = scrollerOf(list);
    var anchor = null;
    var anchorTop = 0;
    if (reading) {
      var top = scroller === document.scrollingElement || scroller === document.documentElement ? 0 : scroller.getBoundingClientRect().top;
      for (var n = list.firstElementChild; n; n = n.nextElementSibling) {
        if (n.getBoundingClientRect().bottom > top) {
          anchor = n;
          anchorTop = n.getBoundingClientRect().top;
          break;
        }
      }
    }
    var started = !!document.querySelector("#tl-older.tl-start");
    var added = 0;
    Array.prototype.slice.call(fresh.children).forEach(function (li) {
      var shown = li.id ? document.getElementById(li.id) : null;
      if (shown && shown.parentElement === list) {
        if (shown.outerHTML !== li.outerHTML) {
          if (shown === anchor) anchor = li;
          shown.replaceWith(li);
        }
        return;
      }
      var key = keyOf(li);
      if (!li.id || key === null) return;
      // Walk up from the newest shown to the first entry earlier than this one.
      var next = null;
      for (var m = list.lastElementChild; m; m = m.previousElementSibling) {
        var k = keyOf(m);
        if (k !== null && earlier(k, key)) break;
        next = m;
      }
      if (next !== null && next === list.firstElementChild && !started) return; // the older link's page holds it
      list.insertBefore(li, next);
      added++;
    });
    if (added > 0) {
      var empty = document.getElementById("timeline-empty");
      if (empty) empty.remove();
    }
    if (anchor && anchor.isConnected) {
      scroller.scrollTop += anchor.getBoundingClientRect().top - anchorTop;
    }
  }

  // The row the keyboard is on, kept across the live list's swaps by its conversation's id.
  var current = null;
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll(".convs > .conv"));
  }
  function mark(row) {
    rows().forEach(function (r) {
      r.classList.remove("kb-current");
    });
    if (!row) return;
    row.classList.add("kb-current");
    current = row.getAttribute("data-id");
    var link = row.querySelector(".conv-link");
    if (link) link.focus();
  }
  function restoreCurrent() {
    if (current === null) return;
    var row = document.getElementById("conv-" + current);
    if (row) row.classList.add("kb-current");
  }
  function move(step) {
    var all = rows();
    if (all.length === 0) return;
    var at = all.findIndex(function (r) {
      return r.getAttribute("data-id") === current;
    });
    if (at < 0) at = all.findIndex(function (r) {
      return r.classList.contains("conv-open");
    });
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    mark(all[next]);
  }
  function press(selector) {
    var el = document.querySelector(selector);
    if (el) el.click();
    return !!el;
  }

  var help = null;
  function toggleHelp() {
    if (help) {
      help.remove();
      help = null;
      return;
    }
    help = document.createElement("div");
    help.className = "keys-help";
    help.setAttribute("role", "dialog");
    help.setAttribute("aria-modal", "false");
    help.setAttribute("aria-labelledby", "keys-help-title");
    help.tabIndex = -1;
    var keys = [
      ["j / k", "next / previous conversation"],
      ["Enter", "open it"],
      ["r", "reply (the composer)"],
      ["Ctrl+Enter", "send"],
      ["/", "saved replies (in an empty composer, or here)"],
      ["e", "close the conversation"],
      ["a", "assign it to me"],
      ["s", "snooze"],
      ["?", "this sheet (Escape closes it)"],
    ];
    var h = document.createElement("h2");
    h.id = "keys-help-title";
    h.textContent = "Keyboard shortcuts";
    var dl = document.createElement("dl");
    keys.forEach(function (k) {
      var dt = document.createElement("dt");
      var kbd = document.createElement("kbd");
      kbd.textContent = k[0];
      dt.appendChild(kbd);
      var dd = document.createElement("dd");
      dd.textContent = k[1];
      dl.appendChild(dt);
      dl.appendChild(dd);
    });
    var close = document.createElement("button");
    close.type = "button";
    close.className = "btn";
    close.textContent = "Close";
    close.addEventListener("click", toggleHelp);
    help.appendChild(h);
    help.appendChild(dl);
    help.appendChild(close);
    document.body.appendChild(help);
    help.focus();
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape" && help) {
      toggleHelp();
      return;
    }
    var t = e.target;
    // Escape leaves a field (the composer keeps its draft): the keys work again.
    if (e.key === "Escape" && t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT")) {
      t.blur();
      return;
    }
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    var handled = true;
    switch (e.key) {
      case "j":
        move(1);
        break;
      case "k":
        move(-1);
        break;
      case "r": {
        var body = document.querySelector("#composer textarea[name=body]");
        if (body) body.focus();
        else handled = false;
        break;
      }
      case "e":
        handled = press('#pane [data-key="e"]');
        break;
      case "a":
        handled = press('#pane [data-key="a"]');
        break;
      case "s": {
        var d = document.getElementById("snooze");
        if (d) {
          d.open = true;
          var first = d.querySelector(".snooze-menu button");
          if (first) first.focus();
        } else handled = false;
        break;
      }
      case "/": {
        // The composer's saved replies (composer.js focuses their filter box when they open).
        var replies = document.getElementById("composer-replies");
        if (replies) replies.open = true;
        else handled = false;
        break;
      }
      case "?":
        toggleHelp();
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  });

  // After an action the page comes back with the conversation open: the keyboard is on its row.
  var open = document.querySelector(".conv-open");
  if (open) {
    current = open.getAttribute("data-id");
    open.classList.add("kb-current");
  }
})();

// Back from an action: the keyboard on the conversation acted on (or the list's first, if it
// left the view); back from a send: in the composer again.
(function () {
  "use strict";
  if (/[?&]done=/.test(location.search)) {
    var target = document.querySelector(".conv-open .conv-link") || document.querySelector(".convs .conv-link");
    if (target) target.focus();
  } else if (/[?&]sent=/.test(location.search)) {
    var body = document.querySelector("#composer textarea[name=body]");
    if (body) body.focus();
  }
})();
