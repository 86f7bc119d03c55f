// The lead page's timeline: new entries appear without a reload. Every few seconds while the tab
// is visible, it asks the declared JSON route for the entries recorded after the mark it holds and
// appends the list items the server rendered (escaped there, as the page itself is). A hidden tab
// asks nothing; coming back asks at once. The polls say they are one (X-Leadline-Poll, see
// src/console/sessions.ts): they do not keep the session alive, and once it has ended the page
// goes to sign-in rather than keep showing the lead on an unattended screen.
(function () {
  "use strict";
  var list = document.getElementById("timeline");
  if (!list || !list.getAttribute("data-src")) return; // an older page does not poll
  var mark = list.getAttribute("data-mark") || "";
  var src = list.getAttribute("data-src") || "";
  var EVERY_MS = 4000;
  var busy = false;

  function poll() {
    if (busy || document.visibilityState !== "visible") return;
    busy = true;
    fetch(src + "?after=" + encodeURIComponent(mark), {
      credentials: "same-origin",
      headers: { accept: "application/json", "x-leadline-poll": "1" },
    })
      .then(function (r) {
        if (r.status === 401) location.href = "/console/login?next=" + encodeURIComponent(location.pathname + location.search);
        return r.ok ? r.json() : null;
      })
      .then(function (answer) {
        if (!answer || answer.ok !== true) return;
        mark = answer.after;
        list.setAttribute("data-mark", mark);
        if (answer.count > 0) {
          list.insertAdjacentHTML("beforeend", answer.html);
          var empty = document.getElementById("timeline-empty");
          if (empty) empty.remove();
        }
      })
      .catch(function () {
        // Offline or the server restarting: the next tick tries again.
      })
      .then(function () {
        busy = false;
      });
  }

  setInterval(poll, EVERY_MS);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") poll();
  });
})();
