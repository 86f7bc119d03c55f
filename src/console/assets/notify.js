// Browser notifications of new inbound messages, optional to the user: the inbox's "Notify me of
// new messages" box (hidden where the browser has no Notification). Turning it on asks the
// browser's permission; the choice is kept in localStorage (per browser, not per account). While
// it is on and granted, a new inbound text or email in the viewer's Mine (assigned to them) or in
// Unassigned (open, nobody's) shows a Notification when the tab is hidden; a visible tab shows it
// in the list already. It reads the inbox's existing stream (htmx's SSE extension on
// #inbox-live): its events carry ids and states, never message text, so the notification says
// who (from the list, when the row is there) and the channel, not what.
(function () {
  "use strict";
  var live = document.getElementById("inbox-live");
  var box = document.getElementById("inbox-notify");
  var toggle = document.getElementById("notify-toggle");
  var words = document.getElementById("notify-status");
  if (!live || !box || !toggle || !("Notification" in window)) return;
  var KEY = "leadline.notify";
  var me = live.getAttribute("data-me") || "";
  var stored = function () {
    try {
      return localStorage.getItem(KEY) === "on";
    } catch (e) {
      return false;
    }
  };
  var remember = function (on) {
    try {
      localStorage.setItem(KEY, on ? "on" : "off");
    } catch (e) {
      // Storage refused (a private window's policy): the choice lasts this page only.
    }
  };
  var say = function (text) {
    if (words) words.textContent = text;
  };

  box.hidden = false;
  toggle.checked = stored() && window.Notification.permission === "granted";
  if (stored() && window.Notification.permission === "denied") say("Notifications are blocked for this site in the browser's settings.");

  toggle.addEventListener("change", function () {
    if (!toggle.checked) {
      remember(false);
      say("");
      return;
    }
    Promise.resolve(window.Notification.requestPermission()).then(function (p) {
      if (p === "granted") {
        remember(true);
        say("You will be notified of new messages in Mine and Unassigned while this tab is in the background.");
      } else {
        toggle.checked = false;
        remember(false);
        say("The browser did not allow notifications for this site.");
      }
    });
  });

  live.addEventListener("htmx:sseMessage", function (e) {
    if (!toggle.checked || window.Notification.permission !== "granted" || document.visibilityState !== "hidden") return;
    if (!e.detail || e.detail.type !== "change") return;
    var c;
    try {
      c = JSON.parse(e.detail.data);
    } catch (err) {
      return;
    }
    if (!c || c.kind !== "message" || c.direction !== "in" || c.status !== "open") return;
    if (!(c.assignee === null || (me !== "" && c.assignee === me))) return;
    var row = document.querySelector("#conv-" + Number(c.conversation) + " .conv-link");
    var who = row ? row.textContent.trim() : "a lead";
    var channel = c.channel === "email" ? "email" : "text";
    var n = new window.Notification("New " + channel + " from " + who, {
      body: c.assignee === null ? "Unassigned" : "Assigned to you",
      tag: "leadline-conversation-" + c.conversation,
    });
    n.onclick = function () {
      window.focus();
      location.href = "/console/inbox?view=" + (c.assignee === null ? "unassigned" : "mine") + "&open=" + Number(c.conversation);
    };
  });
})();
