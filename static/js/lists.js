// The dashboard lists (traces, queue, experiences, audit), after an htmx swap of their results.
(function () {
  "use strict";

  // A filter's error is swapped in out of band (templates/filters.html#oob); the field itself is
  // not replaced, so its invalid state follows the error here.
  function syncInvalid() {
    document.querySelectorAll(".filter-grid .field-error").forEach(function (error) {
      var field = document.getElementById(error.id.replace(/_error$/, ""));
      if (!field) return;
      var invalid = error.textContent.trim() !== "";
      if (invalid) {
        field.setAttribute("aria-invalid", "true");
        field.setAttribute("aria-describedby", error.id);
      } else {
        field.removeAttribute("aria-invalid");
        if (field.getAttribute("aria-describedby") === error.id) field.removeAttribute("aria-describedby");
      }
    });
  }

  // After "Older" / "Newer" / "Newest": the reader goes to the top of the new page, with the
  // focus on the list (not left on a link that is gone, or at the bottom of the page).
  var pageChange = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    pageChange = event.detail.elt && event.detail.elt.hasAttribute("data-page-link");
  });
  document.addEventListener("htmx:afterSettle", function () {
    syncInvalid();
    if (!pageChange) return;
    pageChange = false;
    var results = document.getElementById("results");
    if (!results) return;
    results.scrollIntoView({ block: "start" });
    results.focus({ preventScroll: true });
  });
})();
