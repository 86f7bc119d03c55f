// Number insertion: a Copy button beside each script tag to paste. Without this script (or without
// clipboard access) the button stays hidden and the tag is plain selectable text.
(function () {
  "use strict";
  if (!navigator.clipboard) return;
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-copy") + "-status");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent).then(
        function () {
          if (status) status.textContent = "Copied.";
        },
        function () {
          if (status) status.textContent = "Copying was refused: select the tag and copy it.";
        },
      );
    });
  });
})();
