// Draws the goal page's charts from the figures in its JSON data block (no inline script: the page's CSP forbids it).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var data = document.getElementById("figures");
  if (!data || typeof Plotly === "undefined") { return; }
  var figures = JSON.parse(data.textContent);
  var drawn = [];
  document.querySelectorAll("[data-figure]").forEach(function (element) {
    var figure = figures[element.dataset.figure];
    if (!figure) { return; }
    drawn.push(Plotly.newPlot(element, figure.data, figure.layout, {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["toImage"]}));
  });
  Promise.all(drawn).then(function () { document.body.dataset.chartsRendered = String(drawn.length); });
});
