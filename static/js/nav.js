// The top bar on a narrow screen: the links fold behind a "Menu" button (responsive.css says
// when). Without this script the button stays hidden and the links simply wrap.
(function () {
  "use strict";

  function setOpen(nav, button, open) {
    nav.classList.toggle("is-open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }

  function init() {
    var button = document.getElementById("menu-button");
    var menu = document.getElementById("main-menu");
    if (!button || !menu) return;
    var nav = button.closest("nav");
    nav.classList.add("has-menu");
    button.hidden = false;
    button.addEventListener("click", function () {
      setOpen(nav, button, button.getAttribute("aria-expanded") !== "true");
    });
    // Escape closes an open menu from anywhere in it and gives the focus back to the button.
    nav.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && button.getAttribute("aria-expanded") === "true") {
        setOpen(nav, button, false);
        button.focus();
      }
    });
    // Leaving the menu (a click or the focus elsewhere) folds it again.
    document.addEventListener("click", function (event) {
      if (!nav.contains(event.target)) setOpen(nav, button, false);
    });
    nav.addEventListener("focusout", function (event) {
      if (event.relatedTarget && !nav.contains(event.relatedTarget)) setOpen(nav, button, false);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
