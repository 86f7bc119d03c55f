// Older timeline entries load upward in place (src/console/timeline-older.ts): htmx inserts them
// above the oldest shown when the "Show older entries" link comes into view or is pressed. This
// keeps the reader where they were: the distance from the bottom of whatever scrolls the timeline
// (the inbox's pane, or the page) is taken before the swap and put back after it, so the entry in
// view stays in view. The browser's own scroll anchoring does not help at the very top (it does
// not anchor at scroll position 0), which is exactly where the link is reached. In the inbox, the
// live refresh merges the newest entries into this same list rather than replacing it
// (assets/inbox.js), so the older entries read, and an older page still on its way, stay where
// they belong.
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
