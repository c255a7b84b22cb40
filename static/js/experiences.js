// Curation pages: selection for the library's bulk actions, the merge queue's combined wording,
// suggestions and warnings for scope values, focus after a row action.
// Nothing here inserts HTML: the server renders (and escapes) everything; text goes in as text.
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

  // ---------------------------------------------------------------- known scope values
  // The page's <datalist data-known-list> hold the environments / agents / users / tools the
  // project's agents used. A scope field is a comma-separated list, which a datalist does not
  // understand: while one is edited, its datalist offers "what is typed so far, <value>".
  var known = {};

  function knownValues(kind) {
    if (!known[kind]) {
      var list = document.querySelector('datalist[data-known-list="' + kind + '"]');
      known[kind] = list ? Array.prototype.map.call(list.options, function (o) { return o.value; }) : null;
    }
    return known[kind];
  }

  function parts(text) {
    return text.split(",").map(function (v) { return v.trim(); }).filter(Boolean);
  }

  function offer(input) {
    var list = input.list;
    var kind = list && list.getAttribute("data-known-list");
    var values = kind && knownValues(kind);
    if (!values) return;
    var prefix = "";
    var typed = [];
    if (input.hasAttribute("data-known")) {
      var cut = input.value.lastIndexOf(",");
      prefix = cut < 0 ? "" : input.value.slice(0, cut + 1).trim() + " ";
      typed = parts(prefix);
    }
    var fresh = values.filter(function (v) { return typed.indexOf(v) < 0; }).map(function (v) {
      var option = document.createElement("option");
      option.value = prefix + v;
      return option;
    });
    list.replaceChildren.apply(list, fresh);
  }

  // Edits (insert, delete, substitute) from a to b, stopping early past `most`.
  function distance(a, b, most) {
    if (Math.abs(a.length - b.length) > most) return most + 1;
    var row = [];
    for (var j = 0; j <= b.length; j++) row.push(j);
    for (var i = 1; i <= a.length; i++) {
      var diagonal = row[0];
      row[0] = i;
      for (var k = 1; k <= b.length; k++) {
        var above = row[k];
        row[k] = Math.min(row[k] + 1, row[k - 1] + 1, diagonal + (a[i - 1] === b[k - 1] ? 0 : 1));
        diagonal = above;
      }
    }
    return row[b.length];
  }

  function closest(value, values) {
    var best = null, bestDistance = 3;
    values.forEach(function (v) {
      var d = v.toLowerCase() === value.toLowerCase() ? 0 : distance(value, v, 2);
      if (d < bestDistance) { best = v; bestDistance = d; }
    });
    return best;
  }

  var NOUNS = { environments: "environment", agents: "agent", users: "user" };

  // Shows, next to a scope field, the values no trace or recall of the project used. While
  // typing, the last value counts only once a comma follows it (no warning about "doc" on the
  // way to "docker"); on leaving the field, every value counts. Saving is never blocked here.
  function warn(input, finished) {
    var kind = input.getAttribute("data-known");
    var hint = input.parentElement.querySelector("[data-unknown-hint]");
    var values = knownValues(kind);
    if (!hint || !values) return;
    var typed = parts(input.value);
    if (!finished && !/,\s*$/.test(input.value)) typed = typed.slice(0, -1);
    var unknown = typed.filter(function (v) {
      return values.indexOf(kind === "environments" ? v.toLowerCase() : v) < 0;
    });
    if (!unknown.length) {
      hint.hidden = true;
      hint.textContent = "";
      input.removeAttribute("aria-describedby");
      return;
    }
    var words = unknown.map(function (v) {
      var near = closest(kind === "environments" ? v.toLowerCase() : v, values);
      return "“" + v + "”" + (near ? " (did you mean “" + near + "”?)" : "");
    });
    hint.textContent = "Unknown " + NOUNS[kind] + (unknown.length > 1 ? "s: " : ": ") + words.join(", ") +
      ": no trace or recall of this project used " + (unknown.length > 1 ? "them" : "it") +
      " yet, but you can still save.";
    hint.hidden = false;
    if (!hint.id) hint.id = "unknown-hint-" + Math.random().toString(36).slice(2);
    input.setAttribute("aria-describedby", hint.id);
  }

  document.addEventListener("focusin", function (event) {
    var input = event.target.closest && event.target.closest('input[list^="known-"]');
    if (input) offer(input);
  });

  document.addEventListener("input", function (event) {
    var input = event.target.closest && event.target.closest("input[data-known]");
    if (!input) return;
    offer(input);
    warn(input, false);
  });

  document.addEventListener("change", function (event) {
    var input = event.target.closest && event.target.closest("input[data-known]");
    if (input) warn(input, true);
  });

  function warnAll(root) {
    (root || document).querySelectorAll("input[data-known]").forEach(function (input) {
      if (input.value) warn(input, true);
    });
  }

  // ---------------------------------------------------------------- focus after a row action
  // An htmx action replaces the whole row, and the focused control with it. Focus goes back to
  // the same control of the new row (or, from an edit / scope form, to the button that opened
  // it); into the form when one opens; to the row itself when the control is gone.
  var pendingFocus = null;

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var row = elt && elt.closest && elt.closest("tr.experience-row");
    if (!row) return;
    var active = document.activeElement;
    var opener = row.querySelector("[data-return-focus]");
    var key = (opener && opener.getAttribute("data-return-focus")) ||
      (active && row.contains(active) && active.getAttribute("data-focus-key")) ||
      elt.getAttribute("data-focus-key");
    pendingFocus = { id: row.id, key: key };
  });

  function focusTarget(row, key) {
    if (row.classList.contains("editing")) {
      var warned = row.querySelector(".unknown-warning") && row.querySelector("input[data-known][aria-describedby]");
      return warned || row.querySelector(".errorlist") && row.querySelector("[aria-invalid=true]") ||
        row.querySelector("textarea, input:not([type=hidden]), select");
    }
    return (key && row.querySelector('[data-focus-key="' + key + '"]')) ||
      (key && key.indexOf("status-") === 0 && row.querySelector('[data-focus-key^="status-"]')) ||
      row;
  }

  document.addEventListener("htmx:afterSettle", function () {
    if (!pendingFocus) return;
    var row = document.getElementById(pendingFocus.id);
    var key = pendingFocus.key;
    pendingFocus = null;
    if (!row) return;
    warnAll(row);
    // a person (or a test) who already moved into the new row keeps their place
    if (row !== document.activeElement && row.contains(document.activeElement)) return;
    var target = focusTarget(row, key);
    if (target) target.focus();
  });

  document.addEventListener("DOMContentLoaded", function () { refresh(); warnAll(); });
  document.addEventListener("htmx:afterSettle", refresh);
})();
