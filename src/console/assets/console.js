// The console's shared script: pages work without it; it only makes them safer to use.
"use strict";
(function () {
  // A form is submitted once: a double click or a second Enter does not post it twice. (Sends
  // also carry an operation_id, so a repeat that gets through anyway is answered, not sent.)
  document.addEventListener(
    "submit",
    function (event) {
      var form = event.target;
      if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== "post") return;
      var ask = form.getAttribute("data-confirm");
      if (ask && !window.confirm(ask)) {
        event.preventDefault();
        return;
      }
      if (form.dataset.submitted === "1") {
        event.preventDefault();
        return;
      }
      form.dataset.submitted = "1";
      form.querySelectorAll('button[type="submit"], button:not([type])').forEach(function (b) {
        b.setAttribute("aria-disabled", "true");
      });
    },
    true,
  );
  // Coming back to a page from the history cache: its forms may be sent again.
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) return;
    document.querySelectorAll("form[data-submitted]").forEach(function (form) {
      delete form.dataset.submitted;
      form.querySelectorAll('[aria-disabled="true"]').forEach(function (b) {
        b.removeAttribute("aria-disabled");
      });
    });
  });
  // A copy button (a secret or link shown once): copies the text of the element it names.
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
    if (!button || !navigator.clipboard) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    navigator.clipboard.writeText(source.textContent || "").then(function () {
      button.textContent = "Copied";
    });
  });
})();
