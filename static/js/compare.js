// The trace list: the "compare the two ticked" bar counts the ticked rows (the server checks
// the count too, so without this script the button still works and explains a wrong count).
(function () {
  "use strict";

  function update(form) {
    var ticked = form.querySelectorAll('input[name="id"]:checked').length;
    var button = form.querySelector("#compare-selected");
    var hint = form.querySelector("#compare-hint");
    if (!button || !hint) return;
    button.disabled = ticked !== 2;
    if (ticked === 2) hint.textContent = "Two ticked: compare them.";
    else if (ticked > 2) hint.textContent = ticked + " ticked: untick " + (ticked - 2) + " to compare two.";
    else hint.textContent = ticked === 1 ? "One ticked: tick one more." : "Tick two rows to compare them step by step.";
  }

  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("#compare-form");
    if (form) update(form);
  });
  // The results are swapped in by htmx when the filters change.
  document.addEventListener("htmx:afterSettle", function () {
    var form = document.getElementById("compare-form");
    if (form) update(form);
  });
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("compare-form");
    if (form) update(form);
  });
})();
