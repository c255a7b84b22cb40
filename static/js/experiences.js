// Curation pages: selection for the library's bulk actions, and the merge queue's combined wording.
// Nothing here inserts HTML: the server renders (and escapes) everything.
(function () {
  "use strict";

  function boxes() {
    return Array.prototype.slice.call(document.querySelectorAll('input[name="ids"][form="bulk"]'));
  }

  function refresh() {
    var all = boxes();
    var chosen = all.filter(function (box) { return box.checked; }).length;
    document.querySelectorAll("[data-selected-count]").forEach(function (counter) {
      counter.textContent = chosen ? chosen + " selected" : "None selected";
    });
    document.querySelectorAll("[data-needs-selection]").forEach(function (button) {
      button.disabled = chosen === 0;
    });
    document.querySelectorAll("[data-select-all]").forEach(function (master) {
      master.checked = all.length > 0 && chosen === all.length;
      master.indeterminate = chosen > 0 && chosen < all.length;
    });
  }

  document.addEventListener("change", function (event) {
    var master = event.target.closest("[data-select-all]");
    if (master) boxes().forEach(function (box) { box.checked = master.checked; });
    if (master || event.target.matches('input[name="ids"]')) refresh();
  });

  // Typing a combined wording chooses it.
  document.addEventListener("input", function (event) {
    if (!event.target.matches("textarea[data-combined]")) return;
    var radio = event.target.form.querySelector("[data-custom-wording]");
    if (radio) radio.checked = true;
  });

  // A form sent back with its errors (422) replaces the form, like a success would; the shared
  // htmx-config swaps only 2xx and 409.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var source = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (event.detail.xhr.status === 422 && source && source.closest("form[data-swap-errors]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // A knowledge-base rebuild this page was following has finished: reload to show the new
  // articles, unless an article is being edited here (a reload would lose the unsaved text);
  // then the status line offers the reload instead.
  document.addEventListener("kb-rebuilt", function () {
    if (document.querySelector("article.kb-article.editing")) {
      document.querySelectorAll("[data-reload-hint]").forEach(function (hint) {
        hint.hidden = false;
      });
      return;
    }
    window.location.reload();
  });

  document.addEventListener("DOMContentLoaded", refresh);
  document.addEventListener("htmx:afterSettle", refresh);
})();
