/* coevo site: the namespace the data files call, and the theme switch. */
"use strict";
var coevo = window.coevo || {};
window.coevo = coevo;
(function () {
  var root = document.documentElement;
  try {
    var stored = window.localStorage.getItem("coevo-theme");
    if (stored === "light" || stored === "dark") root.dataset.theme = stored;
  } catch (e) { /* storage refused (a file:// page in some browsers): the system theme stays */ }
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("theme-toggle");
    if (!button) return;
    button.addEventListener("click", function () {
      var dark = root.dataset.theme ? root.dataset.theme === "dark"
        : window.matchMedia("(prefers-color-scheme: dark)").matches;
      root.dataset.theme = dark ? "light" : "dark";
      try { window.localStorage.setItem("coevo-theme", root.dataset.theme); } catch (e) { /* kept for this page */ }
    });
  });
})();
