/* The task explorer: rows come in chunks (data/tasks-NNNN.js); the first paint loads one, any
   filter, sort or later page loads the rest. Every value is written as text, never as HTML. */
"use strict";
(function () {
  var PAGE = 50;
  var state = { meta: null, chunks: [], rows: [], shown: [], page: 0, sort: "date", descending: true,
                all: false, waiting: [] };
  var COLUMNS = ["id", "track", "language", "repository", "date", "test_file", "methods", "focal"];
  var at = {};
  COLUMNS.forEach(function (name, i) { at[name] = i; });

  function $(id) { return document.getElementById(id); }

  function load(index) {
    var script = document.createElement("script");
    script.src = "data/tasks-" + String(index).padStart(4, "0") + ".js";
    document.body.appendChild(script);
  }

  coevo.explorer = function (meta) {
    state.meta = meta;
    load(0);
  };

  coevo.chunk = function (index, rows) {
    state.chunks[index] = rows;
    if (index === 0 && !state.all) {
      state.rows = rows.slice();
      state.shown = state.rows;
      render();
    }
    if (state.all && loaded() === state.meta.chunks) {
      state.rows = [].concat.apply([], state.chunks);
      var waiting = state.waiting;
      state.waiting = [];
      $("loading").textContent = "";
      waiting.forEach(function (then) { then(); });
    }
  };

  function loaded() {
    return state.chunks.filter(function (chunk) { return chunk; }).length;
  }

  /* Runs `then` once every chunk is here. */
  function everything(then) {
    if (state.all && loaded() === state.meta.chunks) { then(); return; }
    state.waiting.push(then);
    if (state.all) return;
    state.all = true;
    $("loading").textContent = " (loading all " + state.meta.total + ")";
    for (var i = 1; i < state.meta.chunks; i++) load(i);
    if (state.chunks[0]) coevo.chunk(0, state.chunks[0]);
  }

  function filtered() {
    var track = $("f-track").value, language = $("f-language").value, repository = $("f-repository").value;
    var from = $("f-from").value, to = $("f-to").value, text = $("f-text").value.trim().toLowerCase();
    var rows = state.rows.filter(function (row) {
      if (track && row[at.track] !== track) return false;
      if (language && row[at.language] !== language) return false;
      if (repository && row[at.repository] !== repository) return false;
      if (from && row[at.date] < from) return false;
      if (to && row[at.date] > to) return false;
      if (text) {
        var haystack = (row[at.id] + " " + row[at.repository] + " " + row[at.test_file] + " " +
                        row[at.methods] + " " + row[at.focal]).toLowerCase();
        if (haystack.indexOf(text) < 0) return false;
      }
      return true;
    });
    var key = at[state.sort], sign = state.descending ? -1 : 1;
    return rows.sort(function (a, b) {
      if (a[key] < b[key]) return -sign;
      if (a[key] > b[key]) return sign;
      return a[at.id] < b[at.id] ? -1 : (a[at.id] > b[at.id] ? 1 : 0);
    });
  }

  function apply() {
    everything(function () {
      var started = performance.now();
      state.shown = filtered();
      state.page = 0;
      render();
      coevo.lastFilterMs = performance.now() - started;
    });
  }

  function cell(text, href) {
    var td = document.createElement("td");
    if (href) {
      var a = document.createElement("a");
      a.href = href;
      a.textContent = text;
      td.appendChild(a);
    } else {
      td.textContent = text;
    }
    return td;
  }

  function render() {
    var total = state.all ? state.shown.length : state.meta.total;
    var pages = Math.max(1, Math.ceil(total / PAGE));
    var body = $("rows");
    var fragment = document.createDocumentFragment();
    state.shown.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (row) {
      var tr = document.createElement("tr");
      tr.appendChild(cell(row[at.date], "tasks/" + encodeURIComponent(row[at.id]) + ".html"));
      tr.appendChild(cell(row[at.track]));
      tr.appendChild(cell(row[at.language]));
      tr.appendChild(cell(row[at.repository], state.meta.pages[row[at.repository]]));
      tr.appendChild(cell(row[at.test_file]));
      tr.appendChild(cell(row[at.methods]));
      fragment.appendChild(tr);
    });
    body.replaceChildren(fragment);
    $("count").textContent = String(total);
    $("page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page + 1 >= pages;
  }

  document.addEventListener("DOMContentLoaded", function () {
    ["f-track", "f-language", "f-repository", "f-from", "f-to"].forEach(function (id) {
      $(id).addEventListener("change", apply);
    });
    var typing = null;
    $("f-text").addEventListener("input", function () {
      clearTimeout(typing);
      typing = setTimeout(apply, 150);
    });
    $("filters").addEventListener("reset", function () { setTimeout(apply, 0); });
    $("prev").addEventListener("click", function () { state.page -= 1; render(); });
    $("next").addEventListener("click", function () {
      everything(function () {
        if (state.shown.length < state.rows.length && !anyFilter()) state.shown = filtered();
        state.page += 1;
        render();
      });
    });
    document.querySelectorAll("th button[data-sort]").forEach(function (button) {
      button.addEventListener("click", function () {
        var key = button.dataset.sort;
        state.descending = state.sort === key ? !state.descending : key === "date";
        state.sort = key;
        document.querySelectorAll("th[aria-sort]").forEach(function (th) { th.removeAttribute("aria-sort"); });
        button.parentElement.setAttribute("aria-sort", state.descending ? "descending" : "ascending");
        apply();
      });
    });
  });

  function anyFilter() {
    return ["f-track", "f-language", "f-repository", "f-from", "f-to", "f-text"].some(function (id) {
      return $(id).value;
    });
  }
})();
