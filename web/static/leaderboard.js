/* The leaderboard, recomputed in the browser from each run's stored rates for the tasks after
   the slider's date: the same averages, rounding and order as `coevo leaderboard --after`. */
"use strict";
(function () {
  var data = null, cutoffs = [];
  var RUN = { agent: 0, task: 1, pass: 2, success: 3, strict: 4, compile: 5, exec: 6, harness: 7,
              coverage: 8, mutation: 9, seconds: 10, tokens: 11, cost: 12 };

  function $(id) { return document.getElementById(id); }

  /* Python's round(x, digits): the nearest decimal, an exact tie to the even one. */
  function pyRound(x, digits) {
    var scale = Math.pow(10, digits), halves = x * Math.pow(2, digits + 1);
    if (Number.isInteger(halves) && Math.abs(halves) % 2 === 1) {
      var low = Math.floor(x * scale);
      return Number(((low % 2 === 0 ? low : low + 1) / scale).toFixed(digits));
    }
    return Number(x.toFixed(digits));
  }

  function meanOf(values, scale, digits) {
    var present = values.filter(function (v) { return v !== null && v !== undefined; });
    if (!present.length) return null;
    var sum = 0;
    present.forEach(function (v) { sum += v; });
    return pyRound(scale * sum / present.length, digits);
  }

  function judged(run, rate) {
    var share = 1 - run[RUN.harness];
    return share > 0 ? rate / share : null;
  }

  function standing(agent, runs) {
    function mean(values) { return meanOf(values, 100, 1); }
    function rate(index) {
      return mean(runs.map(function (r) { return judged(r, r[index]); })) || 0;
    }
    var seconds = 0;
    runs.forEach(function (r) { seconds += r[RUN.seconds]; });
    return {
      agent: agent.name, model: agent.model, tasks: runs.length,
      strict_success_rate: rate(RUN.strict), success_rate: rate(RUN.success), pass_rate: rate(RUN.pass),
      compile_fail_rate: rate(RUN.compile), exec_fail_rate: rate(RUN.exec),
      harness_fail_rate: mean(runs.map(function (r) { return r[RUN.harness]; })) || 0,
      coverage_on_pass: mean(runs.map(function (r) { return r[RUN.coverage]; })),
      mutation_on_pass: mean(runs.map(function (r) { return r[RUN.mutation]; })),
      seconds: pyRound(seconds / runs.length, 1),
      tokens: meanOf(runs.map(function (r) { return r[RUN.tokens]; }), 1, 4),
      cost: meanOf(runs.map(function (r) { return r[RUN.cost]; }), 1, 4)
    };
  }

  /* The standings for tasks of `track` ("" for all) dated after `after` (seconds; null: all). */
  coevo.standings = function (after, track) {
    var byAgent = {};
    data.runs.forEach(function (run) {
      var task = data.tasks[run[RUN.task]];
      if (track && task[1] !== track) return;
      if (after !== null && (task[0] === null || task[0] <= after)) return;
      (byAgent[run[RUN.agent]] = byAgent[run[RUN.agent]] || []).push(run);
    });
    var standings = Object.keys(byAgent).map(function (index) {
      return standing(data.agents[index], byAgent[index]);
    });
    return standings.sort(function (a, b) {
      return (b.strict_success_rate - a.strict_success_rate) || (b.success_rate - a.success_rate) ||
        (b.pass_rate - a.pass_rate) || (a.agent < b.agent ? -1 : (a.agent > b.agent ? 1 : 0));
    });
  };

  function shown(value, digits) {
    return value === null || value === undefined ? "-" : value.toFixed(digits);
  }

  function render() {
    var position = Number($("lb-after").value);
    var after = position === 0 ? null : cutoffs[position - 1];
    var day = after === null ? null : new Date(after * 1000).toISOString().slice(0, 10);
    $("lb-after-label").textContent = day === null ? "any date" : day;
    var standings = coevo.standings(after, $("lb-track").value);
    coevo.lastStandings = standings;
    var body = $("lb-rows"), fragment = document.createDocumentFragment();
    standings.forEach(function (s) {
      var agent = data.agents.filter(function (a) { return a.name === s.agent; })[0];
      var firstTask = data.tasks.length ? data.tasks[0][2] : "";
      var seen = agent.cutoff !== null && agent.cutoff > (day === null ? firstTask : day);
      var tr = document.createElement("tr");
      var cells = [s.agent + (seen ? " ⚠" : ""), s.model, String(s.tasks), shown(s.strict_success_rate, 1),
        shown(s.success_rate, 1), shown(s.pass_rate, 1), shown(s.compile_fail_rate, 1), shown(s.exec_fail_rate, 1),
        shown(s.harness_fail_rate, 1), shown(s.coverage_on_pass, 1), shown(s.mutation_on_pass, 1),
        shown(s.seconds, 1), shown(s.cost, 2)];
      cells.forEach(function (text, i) {
        var td = document.createElement(i === 0 ? "th" : "td");
        if (i === 0) td.scope = "row";
        if (i >= 2) td.className = "num";
        td.textContent = text;
        if (i === 0 && seen) td.title = "declared training cutoff " + agent.cutoff + ": after some of these tasks";
        tr.appendChild(td);
      });
      fragment.appendChild(tr);
    });
    if (!standings.length) {
      var tr = document.createElement("tr"), td = document.createElement("td");
      td.colSpan = 13;
      td.textContent = "No scored task after this date.";
      tr.appendChild(td);
      fragment.appendChild(tr);
    }
    body.replaceChildren(fragment);
  }

  /* The slider's stops: the first day of every month from the first scored task's to the last's. */
  function months() {
    var stops = [], dated = data.tasks.filter(function (task) { return task[0] !== null; });
    if (!dated.length) return stops;
    var first = dated[0][2], last = dated[dated.length - 1][2];
    var year = Number(first.slice(0, 4)), month = Number(first.slice(5, 7));
    var endYear = Number(last.slice(0, 4)), endMonth = Number(last.slice(5, 7));
    while (year < endYear || (year === endYear && month <= endMonth)) {
      stops.push(Date.UTC(year, month - 1, 1) / 1000);
      month += 1;
      if (month > 12) { month = 1; year += 1; }
    }
    return stops;
  }

  coevo.runs = function (value) {
    data = value;
    cutoffs = months();
    $("lb-after").max = String(cutoffs.length);
    $("lb-after").addEventListener("input", render);
    $("lb-track").addEventListener("change", render);
    render();
  };
})();
