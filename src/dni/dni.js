/* Leadline number insertion. <script src="{BASE_URL}/dni.js" data-pool="KEY" async></script>
 * Shows each visitor their own tracking number in place of the pool's placeholder, in text and
 * tel: links, keeping each occurrence's format. No dependencies. When the API fails, the page is
 * left exactly as it was and nothing is thrown. Served minified (see script.ts). */
(function (w, d) {
  var noop = function () {};
  try {
    var me = d.currentScript || d.querySelector("script[data-pool][src*='dni.js']");
    var pool = me && me.getAttribute("data-pool");
    if (!pool || w.__leadlineDni || !w.fetch) return;
    w.__leadlineDni = 1;
    // The API is wherever this script came from.
    var api = new URL(me.src, location.href).origin + "/hooks/dni.php?action=";
    var NAME = "_ll_dni";
    var cookie = function () {
      var m = /(?:^|;\s*)_ll_dni=([\w-]+)/.exec(d.cookie);
      return m && m[1];
    };
    var vid = cookie();
    try {
      vid = vid || localStorage.getItem(NAME);
    } catch (e) {}
    if (!/^[\w-]{8,48}$/.test(vid || "")) {
      var bytes = w.crypto && crypto.getRandomValues ? crypto.getRandomValues(new Uint8Array(12)) : [];
      vid = "";
      for (var i = 0; i < 12; i++) vid += ((bytes[i] !== undefined ? bytes[i] : Math.random() * 256) | 256).toString(16).slice(1);
    }
    // A first-party cookie for a year, with localStorage for when cookies are refused or cut short.
    try {
      d.cookie = NAME + "=" + vid + ";path=/;max-age=31536000;samesite=lax" + (location.protocol == "https:" ? ";secure" : "");
      localStorage.setItem(NAME, vid);
    } catch (e) {}

    // A text/plain body keeps these simple requests: no preflight before the first lease.
    var post = function (action, body, keep) {
      body.pool = pool;
      body.visitor = vid;
      return fetch(api + action, { method: "POST", body: JSON.stringify(body), keepalive: !!keep, credentials: "omit" })
        .then(function (r) {
          return r.json();
        });
    };

    // Digits to replace (the placeholder, and numbers shown before a change) → the number to show.
    var from = {};
    var to = "";
    // A US number in the common formats, with an optional +1 / 1- prefix, standing alone (not
    // inside a longer run of digits). Group 1 is the character before it, kept as it was.
    var US = /(^|\D)((?:\+1[\s.-]?|1[\s.-])?(?:\(\d{3}\)[\s.-]?|\d{3}[\s.-]?)\d{3}[\s.-]?\d{4})(?!\d)/g;
    // Writes `to` over the last ten digits of s, leaving every other character in place.
    var put = function (s, skip) {
      var out = "";
      for (var j = 0, k = -skip; j < s.length; j++) {
        var c = s.charAt(j);
        out += c >= "0" && c <= "9" ? (k >= 0 ? to.charAt(k) : c) : c;
        if (c >= "0" && c <= "9") k++;
      }
      return out;
    };
    var swap = function (text) {
      return text.replace(US, function (m, before, num) {
        var digits = num.replace(/\D/g, "");
        return from[digits.slice(-10)] ? before + put(num, digits.length - 10) : m;
      });
    };
    var fixText = function (n) {
      var p = n.parentNode;
      if (p && /^(SCRIPT|STYLE|TEXTAREA|NOSCRIPT)$/.test(p.nodeName)) return;
      var t = swap(n.data);
      if (t != n.data) n.data = t;
    };
    var fixLink = function (a) {
      var h = a.getAttribute("href");
      if (!h || !/^\s*tel:/i.test(h)) return;
      var digits = h.replace(/\D/g, "");
      if (from[digits.slice(-10)] && (digits.length == 10 || (digits.length == 11 && digits.charAt(0) == "1"))) {
        a.setAttribute("href", put(h, digits.length - 10));
      }
    };
    // The visitor id into the site's own form fields named leadline_visitor (in `root` and root
    // itself), which its form handler passes to lead intake as dni_visitor: the lead's first touch.
    var fill = function (root) {
      if (root.getAttribute("name") == "leadline_visitor") root.value = vid;
      var f = root.querySelectorAll("[name=leadline_visitor]");
      for (var i = 0; i < f.length; i++) f[i].value = vid;
    };
    var scan = function (root) {
      if (root.nodeType == 3) return fixText(root);
      if (root.nodeType != 1) return;
      fill(root);
      var walker = d.createTreeWalker(root, 4);
      for (var n; (n = walker.nextNode()); ) fixText(n);
      if (root.nodeName == "A") fixLink(root);
      var links = root.getElementsByTagName("a");
      for (var i = 0; i < links.length; i++) fixLink(links[i]);
    };
    var watching = 0;
    var show = function (number) {
      to = number;
      scan(d.documentElement);
      if (watching++) return;
      // Content added or changed later (client-side rendering, widgets) is swapped as it appears.
      new MutationObserver(function (records) {
        try {
          for (var i = 0; i < records.length; i++) {
            var r = records[i];
            if (r.type == "childList") for (var j = 0; j < r.addedNodes.length; j++) scan(r.addedNodes[j]);
            else if (r.type == "characterData") fixText(r.target);
            else fixLink(r.target);
          }
        } catch (e) {}
      }).observe(d.documentElement, { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ["href"] });
      if (d.readyState == "loading") d.addEventListener("DOMContentLoaded", function () {
        try {
          scan(d.documentElement);
        } catch (e) {}
      });
    };

    var q = new URLSearchParams(location.search);
    var utm = {};
    ["source", "medium", "campaign", "term", "content"].forEach(function (k) {
      if (q.get("utm_" + k)) utm[k] = q.get("utm_" + k);
    });
    var every = 0;
    var last = 0;
    var beat = function () {
      last = Date.now();
      post("heartbeat", {}).then(function (r) {
        if (r && r.error == "not_leased") lease();
      }).catch(noop);
    };
    // The ad platforms' click ids, kept first-touch with the visitor like the UTM parameters.
    var visit = { utm: utm, landing: location.href, referrer: d.referrer };
    ["gclid", "gbraid", "wbraid", "fbclid", "msclkid"].forEach(function (k) {
      visit[k] = q.get(k) || "";
    });
    var lease = function (first) {
      post("lease", visit)
        .then(function (r) {
          if (!r || !r.ok) return;
          var digits = String(r.number || "").replace(/\D/g, "").slice(-10);
          if (digits.length == 10) {
            from[String(r.placeholder || "").replace(/\D/g, "").slice(-10)] = 1;
            if (to) from[to] = 1;
            show(digits);
          }
          if (first) post("event", { kind: "pageview", name: location.pathname.slice(0, 80) }).catch(noop);
          // Heartbeats keep the hold while the page is visible: three per hold lifetime, at most
          // five minutes apart, and one on coming back to a page hidden for longer than that.
          if (r.ttl > 0 && !every) {
            every = Math.max(5e3, Math.min(r.ttl * 333, 3e5));
            last = Date.now();
            setInterval(function () {
              if (!d.hidden) beat();
            }, every);
            d.addEventListener("visibilitychange", function () {
              if (!d.hidden && Date.now() - last > every) beat();
            });
          }
        })
        .catch(noop);
    };
    lease(1);
    // Recorded on the way out, without holding the submit back (keepalive outlives the page).
    d.addEventListener("submit", function (e) {
      try {
        var f = e.target;
        // Filled again at the last moment: a field the site added or reset since.
        if (to) fill(d.documentElement);
        var name = f.getAttribute("name") || f.getAttribute("id") || f.getAttribute("action") || "";
        post("event", { kind: "form", name: name.slice(0, 80), meta: { page: location.pathname } }, 1).catch(noop);
      } catch (x) {}
    }, true);
  } catch (e) {}
})(window, document);
