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

  // Keyboard on a list: j / k move from row to row (the focus goes to the row's first link, so
  // Enter opens it), x ticks the row's box (compare two traces, select experiences), ? shows the
  // keys. Never while typing in a field, with a modifier, or over an open dialog.
  var KEYS = [["j", "next row"], ["k", "previous row"], ["Enter", "open the row"],
              ["x", "tick or untick the row's box"], ["?", "show or hide these keys"]];

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#results tbody tr"))
      .filter(function (row) { return row.querySelector("a[href], input[type=checkbox]"); });
  }

  function currentRow() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("#results tbody tr") : null;
  }

  function moveRow(delta) {
    var all = rows();
    if (!all.length) return;
    var at = all.indexOf(currentRow());
    var next = at < 0 ? (delta > 0 ? 0 : all.length - 1) : Math.min(Math.max(at + delta, 0), all.length - 1);
    var row = all[next];
    var target = row.querySelector("td a[href]") || row.querySelector("input[type=checkbox]");
    target.focus();
    target.scrollIntoView({ block: "nearest" });
  }

  function tickRow() {
    var row = currentRow();
    var box = row && row.querySelector("input[type=checkbox]:not([disabled])");
    if (box) box.click();  // a click, so what listens for the change (the compare bar) hears it
  }

  function keysDialog() {
    var dialog = document.getElementById("list-keys");
    if (dialog) return dialog;
    dialog = document.createElement("dialog");
    dialog.id = "list-keys";
    dialog.setAttribute("aria-labelledby", "list-keys-h");
    var article = document.createElement("article");
    var heading = document.createElement("h2");
    heading.id = "list-keys-h";
    heading.textContent = "Keyboard shortcuts";
    var list = document.createElement("dl");
    KEYS.forEach(function (pair) {
      var term = document.createElement("dt");
      var key = document.createElement("kbd");
      key.textContent = pair[0];
      term.appendChild(key);
      var what = document.createElement("dd");
      what.textContent = pair[1];
      list.appendChild(term);
      list.appendChild(what);
    });
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "Close";
    close.addEventListener("click", function () { dialog.close(); });
    article.appendChild(heading);
    article.appendChild(list);
    article.appendChild(close);
    dialog.appendChild(article);
    document.body.appendChild(dialog);
    return dialog;
  }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) &&
      target.type !== "checkbox";
  }

  document.addEventListener("keydown", function (event) {
    if (!document.querySelector("#results") || document.querySelector("ol.steps")) return;
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var open = document.querySelector("dialog[open]");
    if (open && !(event.key === "?" && open.id === "list-keys")) return;
    switch (event.key) {
      case "j": event.preventDefault(); moveRow(1); break;
      case "k": event.preventDefault(); moveRow(-1); break;
      case "x": if (currentRow()) { event.preventDefault(); tickRow(); } break;
      case "?": event.preventDefault(); var d = keysDialog(); if (d.open) d.close(); else d.showModal(); break;
      default: return;
    }
  });
})();
