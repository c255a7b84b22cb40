// Charts of the stats page; the figures come from the page's json_script block (escaped JSON).
// The page shows every figure as a table without JavaScript (templates/traces/stats.html):
// a chart is drawn over its table, which then stays for screen readers only.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("stats-data").textContent);
  document.querySelectorAll("[data-js-only]").forEach(function (el) { el.hidden = false; });

  function canvas(id) {
    var element = document.getElementById(id);
    if (!element) return null;
    element.hidden = false;
    var figure = element.closest(".figure");
    if (figure) {
      figure.classList.add("has-chart");
      // the table is then for screen readers only: no invisible stop for the Tab key
      figure.querySelectorAll(".figure-table").forEach(function (box) { box.removeAttribute("tabindex"); });
    }
    return element;
  }
  var colours = { necessary: "#1f7a4d", redundant: "#5c6670", misleading: "#9a5b00", failed: "#b42318" };
  var sourceColours = { llm: "#2563eb", heuristic: "#d29922", human: "#6d4bd1", accepted: "#9aa5b1" };
  Chart.defaults.font.size = 12;
  Chart.defaults.animation = false;
  // Axis text and grid lines in the page's own colours (light or dark, as the system says).
  var style = getComputedStyle(document.documentElement);
  Chart.defaults.color = style.getPropertyValue("--hs-muted").trim() || Chart.defaults.color;
  Chart.defaults.borderColor = style.getPropertyValue("--hs-border").trim() || Chart.defaults.borderColor;

  new Chart(canvas("chart-labels"), {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: data.sources.map(function (source) {
        var counts = data.by_source[source] || {};
        var name = (data.source_names || {})[source] || source;
        return { label: name, backgroundColor: sourceColours[source], data: data.labels.map(function (l) { return counts[l] || 0; }) };
      })
    },
    options: { responsive: true, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } }
  });

  new Chart(canvas("chart-status"), {
    type: "bar",
    data: {
      labels: data.statuses.map(function (s) { return s[0]; }),
      datasets: [{ label: "traces", backgroundColor: "#4b6a88", data: data.statuses.map(function (s) { return s[1]; }) }]
    },
    options: { indexAxis: "y", plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } }
  });

  if (data.per_day.length) new Chart(canvas("chart-days"), {
    type: "line",
    data: {
      labels: data.per_day.map(function (d) { return d[0]; }),
      datasets: [{ label: "traces", borderColor: "#2563eb", backgroundColor: "rgba(37,99,235,0.15)", fill: true, data: data.per_day.map(function (d) { return d[1]; }) }]
    },
    options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } }
  });

  var agreement = canvas("chart-agreement");
  if (agreement) {
    var rows = data.agreement.rows;
    new Chart(agreement, {
      type: "bar",
      data: {
        labels: rows.map(function (r) { return r.label; }),
        datasets: [
          { label: "both", backgroundColor: "#1f7a4d", data: rows.map(function (r) { return r.both; }) },
          { label: "machine only", backgroundColor: "#2563eb", data: rows.map(function (r) { return r.machine_only; }) },
          { label: "human only", backgroundColor: "#6d4bd1", data: rows.map(function (r) { return r.human_only; }) }
        ]
      },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } }
    });
  }
})();
