// The trace inspector's reading aids: sticky panels placed below the measured top bar, the step
// window (a long run is drawn 50 steps at a time; htmx loads the rest as the reader scrolls,
// moves or jumps), step filters and jumps (links and keys), folds that stay open across a
// relabel's swap. Like hindsight.js it never inserts trace content as HTML itself: htmx swaps in
// what the server rendered (and escaped); this file toggles attributes and moves focus.
// The current step is the one hindsight.js marks .is-current; focusing a step makes it current.
(function () {
  "use strict";

  var root = document.documentElement;

  // ------------------------------------------------------------------ sticky offsets
  // The top bar's height depends on the width (its links wrap) and the font; measure it instead
  // of guessing, and again whenever it or the claim bar changes size.
  function measureBars() {
    var bar = document.querySelector(".topbar");
    var claim = document.querySelector(".claim-bar");
    var barHeight = bar ? bar.getBoundingClientRect().height : 0;
    var claimHeight = claim ? claim.getBoundingClientRect().height : 0;
    root.style.setProperty("--hs-topbar-height", barHeight + "px");
    root.style.setProperty("--hs-claim-height", claimHeight + "px");
    root.setAttribute("data-bars-measured", "");
  }

  function watchBars() {
    measureBars();
    if (window.ResizeObserver) {
      var observer = new ResizeObserver(measureBars);
      [".topbar", ".claim-bar"].forEach(function (selector) {
        var element = document.querySelector(selector);
        if (element) observer.observe(element);
      });
    }
    window.addEventListener("resize", measureBars);
  }

  // ------------------------------------------------------------------ the whole trajectory
  // The page draws a window of the steps; <ol class="steps"> carries the indexes of every step
  // each filter shows and each jump reaches (data-tools, data-errors, ...), and the versions of
  // the machine labels (data-machine, "index:version,..."). A relabel changes one step: its new
  // attributes update these sets (stepChanged), so counts, jumps and "Accept all" stay true.
  var FILTERS = ["", "tools", "errors", "mine", "low", "blamed"];
  var FILTER_TEXT = {
    tools: "tool calls", errors: "errors", mine: "labels you set",
    low: "machine labels of low confidence", blamed: "steps the machine blames",
  };
  var SETS = ["tools", "errors", "mine", "unchecked", "low", "blamed"];
  var sets = {};
  var machine = {}; // index -> version of the machine-labelled steps
  var total = 0;

  function list() { return document.querySelector("ol.steps"); }
  function allSteps() { return Array.prototype.slice.call(document.querySelectorAll("ol.steps > li.step")); }
  function isShown(step) { return step.getClientRects().length > 0; }
  function shownSteps() { return allSteps().filter(isShown); }
  function currentStep() { return document.querySelector("ol.steps > li.step.is-current"); }
  function stepAt(index) { return document.getElementById("step-" + index); }
  function indexOf(step) { return parseInt(step.getAttribute("data-index"), 10); }
  function sorted(values) { return values.sort(function (a, b) { return a - b; }); }

  function readSets() {
    var steps = list();
    total = parseInt(steps.getAttribute("data-total") || "0", 10);
    SETS.forEach(function (name) {
      sets[name] = {};
      (steps.getAttribute("data-" + name) || "").split(" ").forEach(function (value) {
        if (value !== "") sets[name][value] = true;
      });
    });
    (steps.getAttribute("data-machine") || "").split(",").forEach(function (pair) {
      var parts = pair.split(":");
      if (parts.length === 2) machine[parts[0]] = parts[1];
    });
  }

  function members(name) { return sorted(Object.keys(sets[name]).map(Number)); }
  function count(filter) { return filter ? Object.keys(sets[filter]).length : total; }
  function inFilter(filter, index) { return !filter || !!sets[filter][index]; }

  // A swapped step (a relabel) says what it now is.
  function stepChanged(step) {
    var index = step.getAttribute("data-index");
    var source = step.getAttribute("data-source") || "";
    var flag = function (name, on) { if (on) sets[name][index] = true; else delete sets[name][index]; };
    flag("unchecked", !source || /^(llm|heuristic)$/.test(source));
    flag("mine", step.hasAttribute("data-mine"));
    flag("low", step.hasAttribute("data-low"));
    flag("blamed", step.hasAttribute("data-blamed"));
    if (/^(llm|heuristic)$/.test(source)) machine[index] = step.getAttribute("data-version");
    else delete machine[index];
  }

  // ------------------------------------------------------------------ the step window
  // A run of consecutive steps (of the filter it was loaded with, data-loaded) with a
  // li.steps-more before and after it when there is more: htmx loads the next run when one
  // scrolls into view (hx-trigger="intersect once"), or when the keyboard reaches it.
  function loadedFilter() { return list().getAttribute("data-loaded") || ""; }
  function isWhole() { return !list().querySelector("li.steps-more") && loadedFilter() === ""; }

  function windowUrl(filter, query) {
    return list().getAttribute("data-url") + "?" + (filter ? "show=" + filter + "&" : "") + query;
  }

  // Resolves true once the li.steps-more (`which`: "before" / "after") has been replaced by the
  // steps it stands for, false when there is none or the request failed.
  function extend(which) {
    var more = list().querySelector('li.steps-more[data-more="' + which + '"]');
    if (!more) return Promise.resolve(false);
    var link = more.querySelector("a");
    return new Promise(function (resolve) {
      var watcher = new MutationObserver(function () {
        if (!more.isConnected) { stop(); resolve(true); }
      });
      var failed = function (event) {
        if (event.detail.elt === link) { stop(); resolve(false); }
      };
      function stop() {
        watcher.disconnect();
        document.removeEventListener("htmx:responseError", failed);
        document.removeEventListener("htmx:sendError", failed);
      }
      watcher.observe(list(), { childList: true });
      document.addEventListener("htmx:responseError", failed);
      document.addEventListener("htmx:sendError", failed);
      // hx-sync="this:drop": a load already under way (it scrolled into view) is not repeated
      htmx.trigger(link, "click");
    });
  }

  // Draw the run of `filter`'s steps around step `at` (or its first steps) in place of the list.
  function loadWindow(filter, at) {
    var steps = list();
    steps.setAttribute("aria-busy", "true");
    var query = at === null || at === undefined ? "" : "at=" + at;
    return htmx.ajax("GET", windowUrl(filter, query), { target: steps, swap: "innerHTML" }).then(function () {
      steps.setAttribute("data-loaded", filter);
      steps.removeAttribute("aria-busy");
    }, function () { steps.removeAttribute("aria-busy"); });
  }

  // The step `index`, drawn if it was not (showing every step if the filter hides it).
  function reach(index) {
    var filter = list().getAttribute("data-show") || "";
    if (!inFilter(filter, index)) { filter = ""; setFilterMarks(""); }
    var step = stepAt(index);
    if (step && (loadedFilter() === filter || isWhole())) return Promise.resolve(step);
    return loadWindow(filter, index).then(function () { return stepAt(index); });
  }

  // ------------------------------------------------------------------ filters and jumps
  function say(text) {
    var status = document.querySelector(".step-status");
    if (status) status.textContent = text;
  }

  function showCounts() {
    FILTERS.forEach(function (filter) {
      var shown = document.querySelector('.step-filter [data-count="' + (filter || "all") + '"]');
      if (shown) shown.textContent = String(count(filter));
    });
  }

  function describe(filter) {
    if (!filter) return "";
    return "Showing " + count(filter) + " of " + total + " steps: " + FILTER_TEXT[filter] + ".";
  }

  function focusStep(step) {
    // hindsight.js makes a focused step the current one (its focusin listener).
    step.focus({ preventScroll: true });
    step.scrollIntoView({ block: "nearest" });
  }

  // The filter's marks: the attribute the CSS hides steps by, the links, the URL, the counts.
  function setFilterMarks(filter) {
    list().setAttribute("data-show", filter);
    document.querySelectorAll(".step-filter [data-filter]").forEach(function (link) {
      if (link.getAttribute("data-filter") === filter) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    });
    var url = new URL(window.location.href);
    if (filter) url.searchParams.set("show", filter); else url.searchParams.delete("show");
    history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    showCounts();
    say(describe(filter));
  }

  function focusAfterFilter() {
    var current = currentStep();
    if (!current || !isShown(current)) {
      var first = shownSteps()[0];
      if (first) focusStep(first);
    }
  }

  function setFilter(filter) {
    if (!list() || FILTERS.indexOf(filter) < 0) return;
    var current = currentStep();
    setFilterMarks(filter);
    // Every step drawn: the CSS alone filters. Else the server draws the filter's steps.
    if (isWhole()) { focusAfterFilter(); return; }
    var at = current && inFilter(filter, indexOf(current)) ? indexOf(current) : null;
    loadWindow(filter, at).then(focusAfterFilter);
  }

  function cycleFilter(delta) {
    var shown = [""].concat(FILTERS.slice(1).filter(function (filter) {
      return document.querySelector('.step-filter [data-filter="' + filter + '"]');
    }));
    var at = shown.indexOf(list().getAttribute("data-show") || "");
    setFilter(shown[(at + delta + shown.length) % shown.length]);
  }

  var JUMPS = {
    error: { set: "errors", name: "error" },
    unchecked: { set: "unchecked", name: "unchecked step" },
    low: { set: "low", name: "low-confidence label" },
  };

  // The next (or previous) step of a kind after the current one among those the filter shows,
  // wrapping around once; drawn first if it lies outside the window.
  function jump(kind, delta) {
    var jumpTo = JUMPS[kind];
    var filter = list().getAttribute("data-show") || "";
    var candidates = members(jumpTo.set).filter(function (index) { return inFilter(filter, index); });
    if (!candidates.length) {
      say("No " + jumpTo.name + (filter ? " among the steps shown." : " in this trajectory."));
      return;
    }
    var current = currentStep();
    var at = current ? indexOf(current) : -1;
    var target = null;
    if (delta > 0) {
      target = candidates.filter(function (index) { return index > at; })[0];
    } else {
      var before = candidates.filter(function (index) { return at < 0 || index < at; });
      target = before[before.length - 1];
    }
    var wrapped = target === undefined;
    if (wrapped) target = delta > 0 ? candidates[0] : candidates[candidates.length - 1];
    var position = candidates.indexOf(target) + 1;
    reach(target).then(function (step) {
      if (!step) return;
      focusStep(step);
      say("Step " + target + ": " + jumpTo.name + " " + position + " of " + candidates.length +
          (wrapped ? (delta > 0 ? " (from the top again)." : " (from the end again).") : "."));
    });
  }

  function toggleFolds() {
    var step = currentStep();
    if (!step) return;
    var folds = Array.prototype.slice.call(step.querySelectorAll("details[data-fold]"));
    if (!folds.length) return;
    var open = !folds.some(function (fold) { return fold.open; });
    folds.forEach(function (fold) { fold.open = open; });
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
  }

  // Keys hindsight.js leaves alone (it has j k 1-4 r u ? Esc Ctrl+Enter).
  document.addEventListener("keydown", function (event) {
    if (!list() || typing(event.target)) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (document.querySelector("dialog[open]")) return;
    switch (event.key) {
      case "e": jump("error", 1); break;
      case "E": jump("error", -1); break;
      case "n": jump("unchecked", 1); break;
      case "N": jump("unchecked", -1); break;
      case "l": jump("low", 1); break;
      case "L": jump("low", -1); break;
      case "f": cycleFilter(1); break;
      case "F": cycleFilter(-1); break;
      case "o": toggleFolds(); break;
      default: return;
    }
    event.preventDefault();
  });

  function stepIndexOfHash(hash) {
    var match = /^#step-(\d+)$/.exec(hash || "");
    return match ? parseInt(match[1], 10) : null;
  }

  // Show the step a link or the URL names: drawn first when outside the window.
  function goTo(index, options) {
    reach(index).then(function (step) {
      if (!step) { say("There is no step " + index + " in this trajectory."); return; }
      if (options && options.push) history.pushState(history.state, "", "#step-" + index);
      focusStep(step);
    });
  }

  // Capture phase: runs before hindsight.js's click handler, so a step link to a step the filter
  // hides or the window has not drawn yet shows it first, and the link's target is there to select.
  document.addEventListener("click", function (event) {
    var filterLink = event.target.closest(".step-filter [data-filter], .queue-reason [data-filter]");
    if (filterLink) {
      event.preventDefault();
      setFilter(filterLink.getAttribute("data-filter"));
      return;
    }
    var jumpLink = event.target.closest(".step-jumps [data-jump]");
    if (jumpLink) {
      event.preventDefault();
      jump(jumpLink.getAttribute("data-jump"), 1);
      return;
    }
    var stepLink = event.target.closest('a[href^="#step-"]');
    if (stepLink && list()) {
      var index = stepIndexOfHash(stepLink.getAttribute("href"));
      var target = index === null ? null : stepAt(index);
      if (index !== null && (!target || !isShown(target))) {
        event.preventDefault();
        event.stopPropagation();
        goTo(index, { push: true });
      }
    }
  }, true);

  // A relabel swaps the whole step: keep open what the reader had opened.
  var openFolds = {};
  document.addEventListener("htmx:beforeSwap", function (event) {
    var step = event.detail.target;
    if (!step || !step.matches || !step.matches("li.step")) return;
    openFolds[step.id] = Array.prototype.slice.call(step.querySelectorAll("details[data-fold]"))
      .map(function (fold) { return fold.getAttribute("data-fold") + ":" + fold.open; });
  });
  document.addEventListener("htmx:afterSettle", function () {
    Object.keys(openFolds).forEach(function (id) {
      var step = document.getElementById(id);
      if (step) {
        stepChanged(step);
        openFolds[id].forEach(function (state) {
          var parts = state.split(":");
          var fold = step.querySelector('details[data-fold="' + parts[0] + '"]');
          if (fold && fold.open !== (parts[1] === "true")) fold.open = parts[1] === "true";
        });
      }
      delete openFolds[id];
    });
    if (list()) {
      showCounts();
      var filter = list().getAttribute("data-show") || "";
      if (filter) say(describe(filter));
      // A relabel can take the current step out of the filter ("u" under "my changes"):
      // the keyboard goes on from the next step shown.
      var current = currentStep();
      if (current && !isShown(current)) {
        var steps = allSteps();
        var after = steps.slice(steps.indexOf(current) + 1).filter(isShown)[0];
        var next = after || shownSteps().pop();
        if (next) focusStep(next);
      }
    }
  });

  window.addEventListener("hashchange", function () {
    var index = stepIndexOfHash(location.hash);
    var target = index === null ? null : stepAt(index);
    if (index !== null && (!target || !isShown(target))) goTo(index);
  });

  // For hindsight.js: j / k past the last step drawn, and what "Accept all" confirms.
  window.hindsightSteps = {
    extend: function (delta) { return list() ? extend(delta > 0 ? "after" : "before") : Promise.resolve(false); },
    machine: function () {
      return sorted(Object.keys(machine).map(Number)).map(function (index) { return [index, machine[index]]; });
    },
  };

  function start() {
    watchBars();
    if (!list()) return;
    list().setAttribute("data-loaded", list().getAttribute("data-show") || "");
    readSets();
    var index = stepIndexOfHash(location.hash);
    var target = index === null ? null : stepAt(index);
    if (index !== null && (!target || !isShown(target))) goTo(index);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
