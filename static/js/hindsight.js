// hindsight dashboard: small behaviours on top of htmx. No trace content is ever inserted as HTML
// here: the server renders (and escapes) everything; this file only moves focus and clicks buttons.
(function () {
  "use strict";

  // ------------------------------------------------------------------ generic
  document.addEventListener("change", function (event) {
    var select = event.target.closest("select[data-autosubmit]");
    if (select) select.form.requestSubmit();
  });

  document.addEventListener("click", function (event) {
    var copy = event.target.closest("[data-copy]");
    if (copy) {
      var source = document.querySelector(copy.getAttribute("data-copy"));
      if (!source) return;
      var text = source.textContent;
      var done = function () { copy.textContent = "Copied"; setTimeout(function () { copy.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done);
      } else {
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selected */ }
      }
      return;
    }
    var opener = event.target.closest("[data-open-dialog]");
    if (opener) {
      var dialog = document.getElementById(opener.getAttribute("data-open-dialog"));
      if (dialog && !dialog.open) dialog.showModal();
    }
  });

  // ------------------------------------------------------------------ a lapsed session
  // An htmx request of a browser whose session ended is answered 401 (hindsight_site.htmx_session)
  // instead of the sign-in page swapped into the step. Nothing is lost: the request is kept,
  // the page says what is not saved yet, asks for the password in place, and sends it again.
  var pending = []; // {elt, verb, path, values, target, what}

  function described(values, elt) {
    var step = elt.closest && elt.closest("li.step");
    if (values.to_machine) return "step " + step.getAttribute("data-index") + " back to the machine label";
    if (step && values.label) return "step " + step.getAttribute("data-index") + ": " + values.label;
    return "a change";
  }

  function sayPending() {
    var what = pending.map(function (request) { return request.what; }).filter(Boolean);
    var text = what.length
      ? "Not saved yet: " + what.join(", ") + ". Your session has ended; it is kept on this page and sent again once you sign in."
      : "Your session has ended: sign in again to go on.";
    document.querySelectorAll("[data-session-message]").forEach(function (slot) { slot.textContent = text; });
    var banner = document.getElementById("session-banner");
    if (banner) banner.hidden = !pending.length;
  }

  function keep(detail) {
    var config = detail.requestConfig;
    var values = {};
    if (config.formData) config.formData.forEach(function (value, name) { values[name] = value; });
    delete values.csrfmiddlewaretoken; // rotated by signing in: the form's new one is sent
    var elt = detail.elt;
    pending = pending.filter(function (request) { return request.elt !== elt; }); // the latest wins
    var isGet = config.verb === "get";
    pending.push({
      elt: elt, verb: config.verb, path: config.path, values: isGet ? {} : values,
      target: detail.target, what: isGet ? "" : described(values, elt),
    });
    var step = elt.closest && elt.closest("li.step");
    if (step && !isGet) step.setAttribute("data-unsaved", "");
  }

  function openSignIn() {
    var dialog = document.getElementById("session-dialog");
    if (!dialog) return;
    if (!dialog.open) dialog.showModal();
    document.getElementById("session-password").focus();
  }

  document.addEventListener("htmx:responseError", function (event) {
    if (event.detail.xhr.status !== 401 || !document.getElementById("session-dialog")) return;
    keep(event.detail);
    sayPending();
    openSignIn();
  });

  function useToken(token) {
    var body = document.body;
    var headers = {};
    try { headers = JSON.parse(body.getAttribute("hx-headers") || "{}"); } catch (e) { headers = {}; }
    headers["X-CSRFToken"] = token;
    body.setAttribute("hx-headers", JSON.stringify(headers));
    document.querySelectorAll('input[name="csrfmiddlewaretoken"]').forEach(function (input) { input.value = token; });
  }

  function sendAgain() {
    var again = pending;
    pending = [];
    sayPending();
    again.forEach(function (request) {
      var step = request.elt.closest && request.elt.closest("li.step");
      if (step) step.removeAttribute("data-unsaved");
      if (!request.elt.isConnected) return;
      htmx.ajax(request.verb.toUpperCase(), request.path, {
        source: request.elt, target: request.target, values: request.values,
      });
    });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.id !== "session-form") return;
    event.preventDefault();
    var error = document.getElementById("session-error");
    var headers = {};
    try { headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}"); } catch (e) { headers = {}; }
    fetch(form.action, {
      method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: { "X-CSRFToken": headers["X-CSRFToken"] || "", "Accept": "application/json" },
    }).then(function (response) {
      return response.json().then(function (answer) { return { ok: response.ok, answer: answer }; });
    }).then(function (result) {
      if (!result.ok) {
        error.textContent = result.answer.detail || "Not signed in.";
        error.hidden = false;
        document.getElementById("session-password").select();
        return;
      }
      if (result.answer.username !== document.body.getAttribute("data-user")) {
        location.reload(); // another account: this page was the other one's
        return;
      }
      error.hidden = true;
      form.reset();
      document.getElementById("session-dialog").close();
      useToken(result.answer.csrf_token);
      sendAgain();
    }, function () {
      error.textContent = "The site did not answer: try again in a moment.";
      error.hidden = false;
    });
  });

  // ------------------------------------------------------------------ inspector
  var currentIndex = null; // data-index of the current step (survives htmx swaps)

  function steps() { return Array.prototype.slice.call(document.querySelectorAll("li.step")); }
  function currentStep() {
    return currentIndex === null ? null : document.querySelector('li.step[data-index="' + currentIndex + '"]');
  }

  function select(step, options) {
    if (!step) return;
    var previous = currentStep();
    if (previous && previous !== step) previous.classList.remove("is-current");
    step.classList.add("is-current");
    currentIndex = step.getAttribute("data-index");
    if (!options || options.focus !== false) {
      step.focus({ preventScroll: true });
      step.scrollIntoView({ block: "nearest" });
    }
  }

  function move(delta) {
    // Only the steps the step filter shows (inspector.js hides the others with CSS).
    var all = steps().filter(function (step) { return step.getClientRects().length > 0; });
    var at = all.indexOf(currentStep());
    var beyond = !all.length || (at >= 0 && (at + delta >= all.length || at + delta < 0));
    if (beyond && window.hindsightSteps) {
      // past the last (first) step drawn: inspector.js draws the next ones, then move on
      window.hindsightSteps.extend(delta).then(function (drawn) { if (drawn) move(delta); });
      return;
    }
    if (!all.length) return;
    var next = at < 0 ? (delta > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + delta));
    select(all[next]);
  }

  function setLabel(key) {
    var step = currentStep();
    if (!step) { move(1); step = currentStep(); }
    if (!step) return;
    var button = step.querySelector('button[data-key="' + key + '"]');
    if (button) button.click();
  }

  function backToMachine() {
    var step = currentStep();
    var button = step && step.querySelector("button[name=to_machine]");
    if (button) button.click();
  }

  // The step a fragment ("#step-20") names, or null.
  function stepFromHash(hash) {
    var id = (hash || "").replace(/^#/, "");
    if (!id) return null;
    try { id = decodeURIComponent(id); } catch (e) { return null; }
    var target = document.getElementById(id);
    return target && target.matches("li.step") ? target : null;
  }

  function openReason(step) {
    step = step || currentStep();
    if (!step) return;
    var box = step.querySelector(".reason");
    var toggle = step.querySelector("[data-reason-toggle]");
    box.hidden = false;
    if (toggle) toggle.setAttribute("aria-expanded", "true");
    box.querySelector("input").focus();
  }

  function closeReason(step) {
    var box = step.querySelector(".reason");
    var toggle = step.querySelector("[data-reason-toggle]");
    box.hidden = true;
    if (toggle) toggle.setAttribute("aria-expanded", "false");
    select(step);
  }

  function saveReason(step) {
    var chosen = step.querySelector('.label-buttons button[aria-pressed="true"]');
    if (chosen) { chosen.click(); return; }
    var hint = step.querySelector(".reason small");
    if (hint) hint.textContent = "Choose a label first: press a button (or leave with Esc and use 1–4).";
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
  }

  function toggleCheatsheet() {
    var dialog = document.getElementById("shortcuts");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  // Deferred scripts run while readyState is already "interactive", before DOMContentLoaded.
  var contentLoaded = document.readyState === "complete";
  document.addEventListener("DOMContentLoaded", function () { contentLoaded = true; });

  document.addEventListener("keydown", function (event) {
    if (!document.querySelector("ol.steps")) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      if (document.querySelector("dialog[open]")) return;
      var finish = document.getElementById("finish-form");
      if (!finish) return;
      event.preventDefault();
      // A key pressed before DOMContentLoaded (this script marks the current step earlier) waits
      // for htmx to take the form over there (its listener was added first), so it is asked and
      // sent by htmx, not posted plainly to the no-script confirm page.
      if (!contentLoaded) {
        document.addEventListener("DOMContentLoaded", function () { finish.requestSubmit(); }, { once: true });
      } else finish.requestSubmit();
      return;
    }
    var target = event.target;
    if (typing(target)) {
      var step = target.closest && target.closest("li.step");
      if (step && target.name === "reason") {
        if (event.key === "Escape") { event.preventDefault(); closeReason(step); }
        else if (event.key === "Enter") { event.preventDefault(); saveReason(step); }
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var dialogOpen = document.querySelector("dialog[open]");
    if (dialogOpen && event.key !== "?") return;
    switch (event.key) {
      case "j": event.preventDefault(); move(1); break;
      case "k": event.preventDefault(); move(-1); break;
      case "1": case "2": case "3": case "4": event.preventDefault(); setLabel(event.key); break;
      case "r": event.preventDefault(); openReason(); break;
      case "u": event.preventDefault(); backToMachine(); break;
      case "?": event.preventDefault(); toggleCheatsheet(); break;
      default: return;
    }
  });

  // The keyboard's current step is the one the reviewer sees: it follows focus, links to a step
  // (the Review panel's step numbers) and the URL fragment, so 1–4 never label an unseen step.
  document.addEventListener("focusin", function (event) {
    var step = event.target.closest && event.target.closest("li.step");
    if (step && step !== currentStep()) select(step, { focus: false });
  });

  window.addEventListener("hashchange", function () {
    var step = stepFromHash(location.hash);
    if (step) select(step);
  });

  document.addEventListener("click", function (event) {
    var link = event.target.closest('a[href^="#step-"]');
    if (link) {
      // Also when the fragment is already in the URL (then no hashchange follows).
      var linked = stepFromHash(link.getAttribute("href"));
      if (linked) select(linked);
      return;
    }
    var toggle = event.target.closest("[data-reason-toggle]");
    if (toggle) {
      var owner = toggle.closest("li.step");
      select(owner, { focus: false });
      if (owner.querySelector(".reason").hidden) openReason(owner); else closeReason(owner);
      return;
    }
    var step = event.target.closest("li.step");
    if (step && !event.target.closest("a, summary")) select(step, { focus: !typing(event.target) && !event.target.closest("button") });
  });

  // "Accept all" and "Finish & next" accept the labels still shown as the machine's. Ask first,
  // naming them as they are now (after this page's relabels), and send the versions shown now,
  // so a step put back to the machine's label is accepted, not reported as changed by others.
  // [index, version] of every machine-labelled step, drawn or not (inspector.js keeps them).
  function machineSteps() {
    if (window.hindsightSteps) return window.hindsightSteps.machine();
    return steps().filter(function (step) {
      return /^(llm|heuristic)$/.test(step.getAttribute("data-source") || "");
    }).map(function (step) { return [step.getAttribute("data-index"), step.getAttribute("data-version")]; });
  }

  function labelsText(indexes) {
    var shown = 12;
    var listed = indexes.slice(0, shown).join(", ");
    if (indexes.length > shown) listed += " and " + (indexes.length - shown) + " more";
    var plural = indexes.length === 1 ? "" : "s";
    return indexes.length + " machine label" + plural + " (step" + plural + " " + listed + ")";
  }

  // The question "Accept all" / "Finish" asks (and the versions it sends), or null: none left.
  function acceptQuestion(form) {
    var remaining = machineSteps();
    var indexes = remaining.map(function (pair) { return pair[0]; });
    form.querySelector("input[name=versions]").value = remaining.map(function (pair) {
      return pair[0] + ":" + pair[1];
    }).join(",");
    if (!remaining.length) return null; // nothing would be accepted: no question
    return form.getAttribute("data-accept-question").replace("{labels}", labelsText(indexes));
  }

  // Another reviewer holds the trajectory from the queue (#claim-held): the first label or
  // "Accept all" asks before overriding the claim, and the override is recorded (audit log).
  function heldClaim() {
    var bar = document.getElementById("claim-held");
    return bar && !bar.hasAttribute("data-overridden") ? bar : null;
  }

  function overrideClaim(bar) {
    var headers = {};
    try { headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}"); } catch (e) { headers = {}; }
    return fetch(bar.getAttribute("data-override-url"), {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": headers["X-CSRFToken"] || "", "HX-Request": "true" },
    }).then(function (response) {
      if (!response.ok) return false;
      bar.setAttribute("data-overridden", "");
      var state = bar.querySelector("[data-claim-state]");
      if (state) state.textContent = "You chose to label it anyway (in the audit log).";
      var button = bar.querySelector("form");
      if (button) button.remove();
      return true;
    }, function () { return false; });
  }

  document.addEventListener("htmx:confirm", function (event) {
    var form = event.detail.elt;
    if (!form.matches || !form.matches("form.relabel, form[data-accept-question]")) return;
    var question = form.matches("form[data-accept-question]") ? acceptQuestion(form) : null;
    var held = heldClaim();
    if (!question && !held) return;
    event.preventDefault();
    if (held && !window.confirm(held.getAttribute("data-question"))) return;
    var send = function () {
      if (!question || window.confirm(question)) event.detail.issueRequest(true);
    };
    if (held) overrideClaim(held).then(function (done) { if (done) send(); });
    else send();
  });

  // A saved label swaps the whole step: keep it current and give it focus back.
  document.addEventListener("htmx:afterSettle", function () {
    var step = currentStep();
    if (step && !step.classList.contains("is-current")) {
      var lost = !document.activeElement || document.activeElement === document.body;
      select(step, { focus: lost });
    }
  });

  // At once when this (deferred) script runs, not at DOMContentLoaded: the page's other deferred
  // scripts run in between, and a key pressed meanwhile would move from "no current step".
  function selectFirst() {
    var first = stepFromHash(location.hash);
    var shown = steps().filter(function (step) { return step.getClientRects().length > 0; });
    if (first) select(first); else if (shown.length) select(shown[0], { focus: false });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", selectFirst);
  else selectFirst();
})();
