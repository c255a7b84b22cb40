// The trace inspector's reading aids: sticky panels placed below the measured top bar, step
// filters and jumps (links and keys), folds that stay open across a relabel's swap. Like
// hindsight.js it never inserts trace content as HTML: it only toggles attributes and moves focus.
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

  // ------------------------------------------------------------------ steps
  var FILTERS = ["", "tools", "errors", "mine"];
  var FILTER_TEXT = { tools: "tool calls", errors: "errors", mine: "labels you set" };

  function list() { return document.querySelector("ol.steps"); }
  function allSteps() { return Array.prototype.slice.call(document.querySelectorAll("ol.steps > li.step")); }
  function isShown(step) { return step.getClientRects().length > 0; }
  function shownSteps() { return allSteps().filter(isShown); }
  function currentStep() { return document.querySelector("ol.steps > li.step.is-current"); }

  function matches(step, filter) {
    if (filter === "tools") return step.getAttribute("data-kind") === "tool_call";
    if (filter === "errors") return step.classList.contains("is-error");
    if (filter === "mine") return step.hasAttribute("data-mine");
    return true;
  }

  function say(text) {
    var status = document.querySelector(".step-status");
    if (status) status.textContent = text;
  }

  function counts() {
    var steps = allSteps();
    var found = {};
    FILTERS.forEach(function (filter) {
      found[filter] = steps.filter(function (step) { return matches(step, filter); }).length;
    });
    return found;
  }

  function showCounts() {
    var found = counts();
    FILTERS.forEach(function (filter) {
      var count = document.querySelector('.step-filter [data-count="' + (filter || "all") + '"]');
      if (count) count.textContent = String(found[filter]);
    });
    return found;
  }

  function describe(filter) {
    if (!filter) return "";
    var found = counts();
    return "Showing " + found[filter] + " of " + found[""] + " steps: " + FILTER_TEXT[filter] + ".";
  }

  function focusStep(step) {
    // hindsight.js makes a focused step the current one (its focusin listener).
    step.focus({ preventScroll: true });
    step.scrollIntoView({ block: "nearest" });
  }

  function setFilter(filter) {
    var steps = list();
    if (!steps || FILTERS.indexOf(filter) < 0) return;
    steps.setAttribute("data-show", filter);
    document.querySelectorAll(".step-filter [data-filter]").forEach(function (link) {
      if (link.getAttribute("data-filter") === filter) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    });
    var url = new URL(window.location.href);
    if (filter) url.searchParams.set("show", filter); else url.searchParams.delete("show");
    history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    showCounts();
    say(describe(filter));
    var current = currentStep();
    if (!current || !isShown(current)) {
      var first = shownSteps()[0];
      if (first) focusStep(first);
    }
  }

  function cycleFilter(delta) {
    var steps = list();
    var at = FILTERS.indexOf(steps.getAttribute("data-show") || "");
    setFilter(FILTERS[(at + delta + FILTERS.length) % FILTERS.length]);
  }

  var JUMPS = {
    error: { test: function (step) { return step.classList.contains("is-error"); }, name: "error" },
    unlabelled: { test: function (step) { return !step.getAttribute("data-source"); }, name: "unlabelled step" },
  };

  // The next (or previous) shown step of a kind after the current one, wrapping around once.
  function jump(kind, delta) {
    var jumpTo = JUMPS[kind];
    var steps = shownSteps();
    var candidates = steps.filter(jumpTo.test);
    if (!candidates.length) {
      say("No " + jumpTo.name + (list().getAttribute("data-show") ? " among the steps shown." : " in this trajectory."));
      return;
    }
    var at = steps.indexOf(currentStep());
    var target = null;
    if (delta > 0) {
      target = candidates.filter(function (step) { return steps.indexOf(step) > at; })[0];
    } else {
      var before = candidates.filter(function (step) { return at < 0 || steps.indexOf(step) < at; });
      target = before[before.length - 1];
    }
    var wrapped = !target;
    if (wrapped) target = delta > 0 ? candidates[0] : candidates[candidates.length - 1];
    focusStep(target);
    var position = candidates.indexOf(target) + 1;
    say("Step " + target.getAttribute("data-index") + ": " + jumpTo.name + " " + position + " of " +
        candidates.length + (wrapped ? (delta > 0 ? " (from the top again)." : " (from the end again).") : "."));
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
      case "n": jump("unlabelled", 1); break;
      case "N": jump("unlabelled", -1); break;
      case "f": cycleFilter(1); break;
      case "F": cycleFilter(-1); break;
      case "o": toggleFolds(); break;
      default: return;
    }
    event.preventDefault();
  });

  // Capture phase: runs before hindsight.js's click handler, so a step link to a step the filter
  // hides shows every step first and the link's target is there to select and scroll to.
  document.addEventListener("click", function (event) {
    var filterLink = event.target.closest(".step-filter [data-filter]");
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
      var target = document.getElementById(stepLink.getAttribute("href").slice(1));
      if (target && !isShown(target)) setFilter("");
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
    var target = document.getElementById(location.hash.slice(1));
    if (target && target.matches("ol.steps > li.step") && !isShown(target)) setFilter("");
  });

  function start() {
    watchBars();
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.matches("ol.steps > li.step") && !isShown(target)) {
      setFilter("");
      focusStep(target);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
