// The Today page while it shows the organization's today: its figures are asked for again every
// minute through #today-refresh (htmx swaps #today-live out of the answer), as polls
// (X-Leadline-Poll: a board left open does not keep its session alive). Not while the tab is
// hidden, and not while the focus is inside the figures: a keyboard user scrolling a table would
// lose their place.
(function () {
  "use strict";
  var EVERY_MS = 60000;
  var refresher = document.getElementById("today-refresh");
  if (!refresher || typeof htmx !== "object") return;
  setInterval(function () {
    if (document.visibilityState !== "visible") return;
    var live = document.getElementById("today-live");
    var focused = document.activeElement;
    if (live && focused && focused !== document.body && live.contains(focused)) return;
    htmx.trigger(refresher, "today:refresh");
  }, EVERY_MS);
})();
