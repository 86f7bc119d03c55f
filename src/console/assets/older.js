// Older timeline entries load upward in place (src/console/timeline-older.ts): htmx inserts them
// above the oldest shown when the "Show older entries" link comes into view or is pressed. This
// keeps the reader where they were: the distance from the bottom of whatever scrolls the timeline
// (the inbox's pane, or the page) is taken before the swap and put back after it, so the entry in
// view stays in view. The browser's own scroll anchoring does not help at the very top (it does
// not anchor at scroll position 0), which is exactly where the link is reached. In the inbox, the
// live refresh would put back only the newest entries (dropping the older ones just read), so from
// the moment older entries are asked for it leaves the timeline alone: a refresh answered while
// they are on their way would otherwise replace the list they are meant for. The conversation's
// status and the list stay live; reopening the conversation shows the newest entries again.
(function () {
  "use strict";
  var kept = null;

  function scrollerOf(el) {
    for (var n = el.parentElement; n && n !== document.body; n = n.parentElement) {
      var style = getComputedStyle(n);
      if ((style.overflowY === "auto" || style.overflowY === "scroll") && n.scrollHeight > n.clientHeight) return n;
    }
    return document.scrollingElement || document.documentElement;
  }

  function isTimeline(e) {
    return e.detail && e.detail.target && e.detail.target.classList && e.detail.target.classList.contains("timeline") &&
      e.detail.requestConfig && /\/timeline\/older\?/.test(e.detail.requestConfig.path || "");
  }

  // From the request on, the timeline is the reader's: the refresh no longer asks for it, and one
  // already on its way (its hx-select-oob read when it was answered) is not swapped in.
  document.addEventListener("htmx:beforeRequest", function (e) {
    if (!isTimeline(e)) return;
    e.detail.target.setAttribute("data-older-shown", "yes");
    var refresh = document.getElementById("inbox-refresh");
    if (refresh && document.getElementById("pane-timeline")) {
      var parts = (refresh.getAttribute("hx-select-oob") || "").split(",").filter(function (p) {
        return p !== "#timeline";
      });
      refresh.setAttribute("hx-select-oob", parts.join(","));
    }
  });

  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var t = e.detail && e.detail.target;
    if (t && t.id === "timeline" && t.getAttribute("data-older-shown") === "yes") e.detail.shouldSwap = false;
  });

  document.addEventListener("htmx:beforeSwap", function (e) {
    if (!isTimeline(e)) return;
    var s = scrollerOf(e.detail.target);
    kept = { scroller: s, fromBottom: s.scrollHeight - s.scrollTop };
    e.detail.target.setAttribute("aria-busy", "true");
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    if (!isTimeline(e) || kept === null) return;
    var s = kept.scroller;
    s.scrollTop = s.scrollHeight - kept.fromBottom;
    kept = null;
    e.detail.target.removeAttribute("aria-busy");
  });
})();
