// The booking page's script. A client of the public booking API (book/api.php) and nothing else:
// every time, name and zone shown comes from its answers, but the business's name, which the
// server writes into the page (#business) because the API's answer must not carry it. Times are
// shown in the calendar's zone (the API's labels) or, when the visitor picks it, in the device's
// zone (labels made here from each slot's epoch). No dependencies, no build step.
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };
  var segments = location.pathname.split("/").filter(Boolean);
  var slug = decodeURIComponent(segments[segments.length - 1] || "");
  var token = new URLSearchParams(location.search).get("r") || "";
  var API = "api.php";

  var state = {
    name: "",
    business: ($("business").textContent || "").trim(),
    tz: "",
    visitorTz: "",     // the device's zone when it differs from the calendar's, else ""
    zone: "calendar",  // which of the two the times are shown in: "calendar" | "visitor"
    done: null,        // the time confirmed on the done view ({epoch, label})
    slots: [],
    appointment: null, // the appointment a reschedule link moves
    chosen: null,      // the slot picked
    minutes: 30,       // slot length, inferred from the times offered (for the calendar file)
    busy: false
  };

  var VIEWS = ["view-loading", "view-pick", "view-form", "view-move", "view-done", "view-message"];

  function show(id, focus) {
    VIEWS.forEach(function (v) { $(v).hidden = v !== id; });
    $("main").setAttribute("aria-busy", id === "view-loading" ? "true" : "false");
    if (focus !== false) {
      var heading = $(id).querySelector("h2");
      if (heading) heading.focus({ preventScroll: false });
    }
    window.scrollTo(0, 0);
  }

  function notice(text, kind) {
    var el = $("notice");
    el.textContent = text || "";
    el.className = "notice" + (kind === "info" ? " info" : "");
    el.setAttribute("role", kind === "info" ? "status" : "alert");
    el.hidden = !text;
  }

  function message(title, text, action, onAction) {
    $("message-title").textContent = title;
    $("message-text").textContent = text;
    var button = $("message-action");
    button.hidden = !action;
    button.textContent = action || "";
    button.onclick = onAction || null;
    show("view-message");
  }

  // ---- the API -------------------------------------------------------------------------------

  function call(action, body) {
    var url = API + "?action=" + action;
    var init = { headers: { accept: "application/json" }, cache: "no-store", credentials: "same-origin" };
    if (body) {
      init.method = "POST";
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    } else {
      url += "&s=" + encodeURIComponent(slug) + (token ? "&r=" + encodeURIComponent(token) : "");
    }
    return fetch(url, init)
      .then(function (res) { return res.json(); })
      .catch(function () { return { ok: false, error: "network" }; });
  }

  // ---- presentation helpers --------------------------------------------------------------------

  function zoneName(tz) {
    try {
      var parts = new Intl.DateTimeFormat("en-US", { timeZone: tz, timeZoneName: "longGeneric" }).formatToParts(new Date());
      for (var i = 0; i < parts.length; i++) {
        if (parts[i].type === "timeZoneName" && !/^GMT/.test(parts[i].value)) return parts[i].value;
      }
    } catch (e) { /* an unknown zone name: shown as given */ }
    return "";
  }

  function deviceZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  /** The zone's canonical name ("US/Central" → "America/Chicago"); "" for one Intl does not know. */
  function canonicalZone(tz) {
    try { return new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  // The visitor's choice of zone outlives the page: the reschedule link (now or from a message
  // later) opens a new one. Only "visitor" or "calendar" is kept; storage may be refused.
  var ZONE_PREF = "leadline.book.zone";

  function savedZone() {
    try { return localStorage.getItem(ZONE_PREF) === "visitor" ? "visitor" : "calendar"; } catch (e) { return "calendar"; }
  }

  function saveZone(choice) {
    try { localStorage.setItem(ZONE_PREF, choice); } catch (e) { /* kept for this page only */ }
  }

  function shownZone() {
    return state.zone === "visitor" && state.visitorTz ? state.visitorTz : state.tz;
  }

  var WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  var MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  var civilFormats = {};

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  /**
   * A start (Unix seconds) as the API words it, in zone `tz`: dayKey, day, time and label. Built
   * from numeric parts rather than Intl's formatted text, which varies with the ICU version (U+202F
   * before "AM"), so both zones read alike.
   */
  function timesIn(tz, epoch) {
    var f = civilFormats[tz];
    if (!f) {
      f = civilFormats[tz] = new Intl.DateTimeFormat("en-US", {
        timeZone: tz, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric",
        hour: "numeric", minute: "numeric", timeZoneName: "short"
      });
    }
    var p = {};
    f.formatToParts(new Date(epoch * 1000)).forEach(function (x) { p[x.type] = x.value; });
    var y = Number(p.year), m = Number(p.month), d = Number(p.day);
    var h = Number(p.hour) % 24, min = Number(p.minute);
    var day = WEEKDAYS[new Date(Date.UTC(y, m - 1, d)).getUTCDay()] + ", " + MONTHS[m - 1] + " " + d;
    var time = (h % 12 === 0 ? 12 : h % 12) + ":" + pad(min) + " " + (h < 12 ? "AM" : "PM");
    return { dayKey: y + "-" + pad(m) + "-" + pad(d), day: day, time: time, label: day + ", " + y + " at " + time + " " + (p.timeZoneName || tz) };
  }

  /** A slot's (or any {epoch, label}'s) words in the zone shown: the API's own for the calendar's. */
  function shown(t) {
    if (shownZone() === state.tz) return { dayKey: t.dayKey, day: t.day, time: t.time, label: t.label };
    return timesIn(state.visitorTz, t.epoch);
  }

  function todayKey(tz, offsetDays) {
    try {
      var d = new Date(Date.now() + (offsetDays || 0) * 86400000);
      return new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).format(d);
    } catch (e) { return ""; }
  }

  function initials(name) {
    var words = String(name).trim().split(/\s+/).filter(function (w) { return /[A-Za-z0-9]/.test(w); });
    return words.slice(0, 2).map(function (w) { return w.replace(/[^A-Za-z0-9]/g, "").charAt(0).toUpperCase(); }).join("");
  }

  function inferMinutes(slots) {
    var best = 0;
    for (var i = 1; i < slots.length; i++) {
      if (slots[i].dayKey !== slots[i - 1].dayKey) continue;
      var gap = (slots[i].epoch - slots[i - 1].epoch) / 60;
      if (gap > 0 && (best === 0 || gap < best)) best = gap;
    }
    return best >= 5 && best <= 480 ? best : 30;
  }

  function duration(minutes) {
    var h = Math.floor(minutes / 60);
    var m = minutes % 60;
    if (h === 0) return m + " minutes";
    return (h === 1 ? "1 hour" : h + " hours") + (m ? " " + m + " minutes" : "");
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ---- calendar file (RFC 5545) ----------------------------------------------------------------

  function icsText(s) {
    return String(s).replace(/\\/g, "\\\\").replace(/;/g, "\\;").replace(/,/g, "\\,").replace(/\r?\n/g, "\\n");
  }

  function icsStamp(epoch) {
    return new Date(epoch * 1000).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  }

  function fold(line) {
    var out = [];
    while (line.length > 74) {
      out.push(line.slice(0, 74));
      line = " " + line.slice(74);
    }
    out.push(line);
    return out.join("\r\n");
  }

  function calendarFile(apptId, epoch, link) {
    var lines = [
      "BEGIN:VCALENDAR",
      "VERSION:2.0",
      "PRODID:-//Leadline//Booking//EN",
      "CALSCALE:GREGORIAN",
      "METHOD:PUBLISH",
      "BEGIN:VEVENT",
      "UID:appointment-" + apptId + "@" + location.hostname,
      "DTSTAMP:" + icsStamp(Math.floor(Date.now() / 1000)),
      "DTSTART:" + icsStamp(epoch),
      "DTEND:" + icsStamp(epoch + state.minutes * 60),
      "SUMMARY:" + icsText(state.name || "Appointment"),
      "DESCRIPTION:" + icsText("To change the time, open " + link),
      "URL:" + link,
      // A later file for the same appointment (after a move) replaces the earlier one in calendars.
      "SEQUENCE:" + Math.floor(Date.now() / 60000 - 29000000),
      "STATUS:CONFIRMED",
      "END:VEVENT",
      "END:VCALENDAR"
    ];
    var blob = new Blob([lines.map(fold).join("\r\n") + "\r\n"], { type: "text/calendar;charset=utf-8" });
    return URL.createObjectURL(blob);
  }

  // ---- rendering -------------------------------------------------------------------------------

  function renderHeader() {
    document.title = [state.name, state.business, token ? "Change your appointment" : "Book a time"].filter(Boolean).join(" · ");
    $("cal-name").textContent = state.name || "Book a time";
    if (token) $("eyebrow").textContent = "Change your appointment";
    $("badge").textContent = initials(state.business || state.name);
    $("length").textContent = duration(state.minutes);
    $("fact-length").hidden = state.slots.length === 0;
    renderZones();
    if (state.appointment) {
      $("current-time").textContent = shown(state.appointment).label;
      $("current").hidden = false;
    } else {
      $("current").hidden = true;
    }
  }

  /** One zone as a fact, or the choice between the calendar's and the device's when they differ. */
  function renderZones() {
    var mine = canonicalZone(deviceZone());
    state.visitorTz = mine && mine !== canonicalZone(state.tz) ? mine : "";
    var friendly = zoneName(state.tz);
    $("zone").textContent = "Times are in " + (friendly ? friendly + " (" + state.tz + ")" : state.tz);
    $("fact-zone").hidden = !state.tz || !!state.visitorTz;
    $("zones").hidden = !state.visitorTz;
    if (!state.visitorTz) return;
    var theirs = zoneName(state.visitorTz);
    $("zone-calendar-name").textContent = friendly || state.tz;
    $("zone-calendar-note").textContent = friendly ? "Calendar's time zone (" + state.tz + ")" : "Calendar's time zone";
    $("zone-visitor-name").textContent = theirs || state.visitorTz;
    $("zone-visitor-note").textContent = theirs ? "Your time zone (" + state.visitorTz + ")" : "Your time zone";
    $("zone-" + state.zone).checked = true;
  }

  /** The zone was switched: every time on the page is worded again, in the zone now shown. */
  function zoneSwitched(ev) {
    state.zone = ev.target.value === "visitor" ? "visitor" : "calendar";
    saveZone(state.zone);
    if (state.appointment) {
      $("current-time").textContent = shown(state.appointment).label;
      $("move-from").textContent = shown(state.appointment).label;
    }
    if (state.chosen) {
      $("chosen-time").textContent = shown(state.chosen).label;
      $("move-to").textContent = shown(state.chosen).label;
    }
    if (state.done) $("done-time").textContent = shown(state.done).label;
    renderDays();
  }

  function renderDays() {
    var box = $("days");
    box.textContent = "";
    if (state.slots.length === 0) {
      box.appendChild(el("p", { "class": "empty" }, "There are no open times right now. Please check back later."));
      return;
    }
    var today = todayKey(shownZone(), 0);
    var tomorrow = todayKey(shownZone(), 1);
    // Slots come in time order, so the shown zone's days are runs of them.
    var groups = [];
    state.slots.forEach(function (slot) {
      var words = shown(slot);
      var last = groups[groups.length - 1];
      if (!last || last.key !== words.dayKey) groups.push((last = { key: words.dayKey, day: words.day, slots: [] }));
      last.slots.push({ slot: slot, time: words.time });
    });
    groups.forEach(function (g) {
      var id = "day-" + g.key;
      var section = el("section", { "class": "day", "aria-labelledby": id });
      var heading = el("h3", { id: id }, g.day);
      var rel = g.key === today ? "Today" : g.key === tomorrow ? "Tomorrow" : "";
      if (rel) heading.appendChild(el("span", { "class": "rel" }, " · " + rel));
      section.appendChild(heading);
      var list = el("ul", { "class": "times", "aria-labelledby": id });
      g.slots.forEach(function (entry) {
        var slot = entry.slot;
        var item = el("li");
        var button = el("button", { type: "button", "class": "time", "data-epoch": String(slot.epoch) }, entry.time);
        if (state.appointment && state.appointment.epoch === slot.epoch) {
          button.setAttribute("aria-current", "true");
          button.disabled = true;
          button.appendChild(el("small", null, "Current"));
        } else {
          button.addEventListener("click", function () { choose(slot); });
        }
        item.appendChild(button);
        list.appendChild(item);
      });
      section.appendChild(list);
      box.appendChild(section);
    });
  }

  // ---- flow --------------------------------------------------------------------------------------

  function load(focus) {
    return call("slots").then(function (r) {
      if (!r || r.ok !== true) {
        if (r && r.error === "unknown_link") {
          $("cal-name").textContent = "Booking page not found";
          message("This booking page isn't available", "The link may be mistyped, or the business may have changed it. Please check the link you were sent.");
        } else {
          message("We couldn't load the open times", "Please check your connection and try again.", "Try again", function () { show("view-loading", false); load(); });
        }
        return;
      }
      state.name = r.name;
      state.tz = r.tz;
      state.slots = r.slots || [];
      state.minutes = inferMinutes(state.slots);
      if (token) {
        state.appointment = r.appointment || null;
        if (!state.appointment) {
          renderHeader();
          message("This link can't be used to change an appointment",
            "It may be incomplete, or the appointment may have changed. You can book a new time instead.",
            "Book a new time", function () { location.href = location.pathname; });
          return;
        }
        if (state.appointment.status !== "pending") {
          renderHeader();
          message("This appointment can't be changed online",
            "Please contact " + (state.business || state.name || "the business") + " directly to change it.");
          return;
        }
        if (state.appointment.movable === false) {
          renderHeader();
          tooLateToMove();
          return;
        }
        $("pick-title").textContent = "Pick a new time";
        $("pick-hint").textContent = "Choose the time you'd like instead. Your current time stays booked until you confirm.";
      }
      renderHeader();
      renderDays();
      show("view-pick", focus);
    });
  }

  function choose(slot) {
    state.chosen = slot;
    notice("");
    if (state.appointment) {
      $("move-from").textContent = shown(state.appointment).label;
      $("move-to").textContent = shown(slot).label;
      show("view-move");
    } else {
      $("chosen-time").textContent = shown(slot).label;
      show("view-form");
    }
  }

  function fieldError(name, text) {
    var input = $("f-" + name);
    var error = $("e-" + name);
    error.textContent = text || "";
    error.hidden = !text;
    if (text) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }

  function clearErrors() {
    fieldError("name", "");
    fieldError("phone", "");
  }

  function taken() {
    notice("Sorry, that time was just taken. Please pick another time.");
    show("view-loading", false);
    load();
  }

  function busy(button, on, text) {
    state.busy = on;
    button.disabled = on;
    if (text) button.textContent = text;
  }

  function failure(error) {
    if (error === "rate_limited") {
      notice("Too many attempts from your network. Please wait a little while and try again.");
    } else if (error === "network") {
      notice("We couldn't reach the booking service. Please check your connection and try again.");
    } else {
      notice("Something went wrong. Please try again.");
    }
  }

  function submitBooking(ev) {
    ev.preventDefault();
    if (state.busy || !state.chosen) return;
    clearErrors();
    notice("");
    var name = $("f-name").value.trim();
    var phone = $("f-phone").value.trim();
    var email = $("f-email").value.trim();
    var first = null;
    if (!name) { fieldError("name", "Please enter your name."); first = first || "name"; }
    if (!phone) { fieldError("phone", "Please enter your phone number."); first = first || "phone"; }
    else if (phone.replace(/\D/g, "").length < 10) { fieldError("phone", "Please enter a phone number with at least 10 digits."); first = first || "phone"; }
    if (first) { $("f-" + first).focus(); return; }
    var button = $("submit");
    busy(button, true, "Booking…");
    call("book", { slug: slug, epoch: state.chosen.epoch, name: name, phone: phone, email: email }).then(function (r) {
      busy(button, false, "Confirm booking");
      if (r && r.ok === true) return booked(r);
      var error = r && r.error;
      if (error === "name_required") { fieldError("name", "Please enter your name."); $("f-name").focus(); }
      else if (error === "phone_required") { fieldError("phone", "Please enter your phone number."); $("f-phone").focus(); }
      else if (error === "bad_phone") { fieldError("phone", "Please enter a phone number with at least 10 digits."); $("f-phone").focus(); }
      else if (error === "slot_unavailable" || error === "bad_epoch") taken();
      else if (error === "unknown_link") load();
      else failure(error);
    });
  }

  function withWhom() {
    return state.name + (state.business ? " with " + state.business : "");
  }

  function booked(r) {
    var link = r.reschedule_url;
    var here = location.pathname + "?r=" + encodeURIComponent(r.token);
    state.done = { epoch: state.chosen.epoch, label: r.label };
    $("done-title").textContent = "You're booked";
    $("done-time").textContent = shown(state.done).label;
    $("done-with").textContent = withWhom();
    $("ics").href = calendarFile(r.appt_id, state.chosen.epoch, link);
    $("resched-url").value = link;
    $("resched-link").href = here;
    $("manage").hidden = false;
    $("current").hidden = true;
    show("view-done");
  }

  function confirmMove() {
    if (state.busy || !state.chosen) return;
    notice("");
    var button = $("move-confirm");
    busy(button, true, "Moving…");
    call("reschedule", { token: token, epoch: state.chosen.epoch }).then(function (r) {
      busy(button, false, "Confirm new time");
      if (r && r.ok === true) {
        var link = location.href;
        state.appointment = { appt_id: r.appt_id, epoch: r.epoch, label: state.chosen.label, status: "pending" };
        state.done = { epoch: r.epoch, label: state.chosen.label };
        $("done-title").textContent = "Your appointment has been moved";
        $("done-time").textContent = shown(state.done).label;
        $("done-with").textContent = withWhom();
        $("ics").href = calendarFile(r.appt_id, r.epoch, link);
        $("resched-url").value = link;
        $("resched-link").href = location.pathname + location.search;
        renderHeader();
        $("current").hidden = true;
        show("view-done");
        return;
      }
      var error = r && r.error;
      if (error === "slot_unavailable" || error === "bad_epoch") taken();
      else if (error === "unknown_token" || error === "token_required" || error === "not_pending") load();
      else if (error === "within_cancel_notice") tooLateToMove();
      else failure(error);
    });
  }

  // The calendar's minimum notice to reschedule has begun: the token can no longer move it; the
  // business can (its staff are not bound by the notice).
  function tooLateToMove() {
    message("It's too close to your appointment to change it online",
      "Please contact " + (state.business || state.name || "the business") + " directly to change it.");
  }

  function copyLink() {
    var input = $("resched-url");
    var done = function () { $("copied").textContent = "Link copied."; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(done, function () { input.select(); });
    } else {
      input.select();
      try { if (document.execCommand("copy")) done(); } catch (e) { /* selected for copying by hand */ }
    }
  }

  function back() {
    notice("");
    show("view-pick");
    if (state.chosen) {
      var again = document.querySelector('.time[data-epoch="' + state.chosen.epoch + '"]');
      if (again) again.focus();
    }
  }

  $("book-form").addEventListener("submit", submitBooking);
  $("back").addEventListener("click", back);
  $("move-back").addEventListener("click", back);
  $("move-confirm").addEventListener("click", confirmMove);
  $("copy").addEventListener("click", copyLink);
  $("zone-calendar").addEventListener("change", zoneSwitched);
  $("zone-visitor").addEventListener("change", zoneSwitched);
  $("resched-url").addEventListener("focus", function () { this.select(); });
  state.zone = savedZone();
  show("view-loading", false);
  load(false);
})();
