/* The managerial report's "Results by group": show the table of the chosen dimension and metric (hidden attributes). */
(function () {
  "use strict";
  var root = document.getElementById("by-group");
  if (!root) { return; }
  var dimension = document.getElementById("group-dimension");
  var metric = document.getElementById("group-metric");
  function show() {
    root.querySelectorAll("[data-dimension]").forEach(function (node) {
      var wanted = node.getAttribute("data-dimension") === dimension.value &&
        (!node.hasAttribute("data-metric") || node.getAttribute("data-metric") === metric.value);
      node.hidden = !wanted;
    });
  }
  dimension.addEventListener("change", show);
  metric.addEventListener("change", show);
  show();
  document.documentElement.setAttribute("data-groups", "ready");
})();
