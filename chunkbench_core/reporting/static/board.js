/* The decision board: the run list, the heat map (stage 1), the candidates side by side (stage 2) and the
 * trend chart, built from the JSON of #board-data (see decision_board.board_payload). */
(function () {
  "use strict";
  var el = chunkbench.el, add = chunkbench.add, svg = chunkbench.svg, fmt = chunkbench.fmt, short = chunkbench.short,
    uniq = chunkbench.uniq, DASH = chunkbench.DASH;
  var D = chunkbench.readJson("board-data");
  var SEP = "\u001f";
  var state = { model: "", metric: D.metrics.length ? D.metrics[0].name : "", excluded: {}, candidates: [] };

  function metricInfo(name) {
    for (var i = 0; i < D.metrics.length; i++) { if (D.metrics[i].name === name) { return D.metrics[i]; } }
    return { name: name, label: name, kind: "fraction", higherIsBetter: true };
  }

  var runs = (function () {
    var byId = {}, order = [];
    D.rows.forEach(function (r) {
      if (!byId[r.batch]) {
        byId[r.batch] = { id: r.batch, label: r.batchLabel, created: r.created, rows: [] };
        order.push(byId[r.batch]);
      }
      var run = byId[r.batch];
      run.rows.push(r);
      if (r.created && (!run.created || r.created < run.created)) { run.created = r.created; }
    });
    order.sort(function (a, b) {
      return (a.created || "") < (b.created || "") ? -1 : (a.created || "") > (b.created || "") ? 1 : (a.id < b.id ? -1 : 1);
    });
    return order;
  })();

  function visibleRows() {
    return D.rows.filter(function (r) { return !state.excluded[r.batch] && (!state.model || r.model === state.model); });
  }
  function configId(r) { return r.strategy + SEP + r.model + SEP + (r.variant || ""); }
  // the configuration's one label (strategy × corpus model [variant]), written by the report's Python side
  function configLabel(r) { return r.label; }
  // an element naming a configuration, marked with its key as every report marks it
  function labelled(parent, tag, r) {
    var node = add(parent, el(tag, "config-label", configLabel(r)));
    node.setAttribute("data-configuration", r.key);
    return node;
  }
  function cellId(r) { return r.run + SEP + configId(r); }
  function value(r) { var v = r.metrics[state.metric]; return (v === null || v === undefined) ? null : v; }

  function renderControls() {
    var corpus = document.getElementById("corpus-filter");
    corpus.textContent = "";
    var all = add(corpus, el("option", "", "All corpus models"));
    all.value = "";
    uniq(D.rows.map(function (r) { return r.model; })).sort().forEach(function (m) {
      var o = add(corpus, el("option", "", m));
      o.value = m;
    });
    corpus.value = state.model;
    corpus.addEventListener("change", function () { state.model = corpus.value; render(); });
    var picker = document.getElementById("metric-picker");
    picker.textContent = "";
    D.metrics.forEach(function (m) { var o = add(picker, el("option", "", m.label)); o.value = m.name; });
    picker.value = state.metric;
    picker.addEventListener("change", function () { state.metric = picker.value; render(); });
    document.getElementById("include-all").addEventListener("click", function () { state.excluded = {}; render(); });
  }

  function renderRunList() {
    var table = document.getElementById("run-list");
    table.textContent = "";
    var head = add(add(table, el("thead")), el("tr"));
    ["shown", "run", "created", "experiment run ids", "configurations", "corpus models", "boundary models", "neighbors", "chunk size",
     "top k", "question set"].forEach(function (h) { add(head, el("th", "", h)); });
    var body = add(table, el("tbody"));
    runs.forEach(function (run) {
      var tr = add(body, el("tr", state.excluded[run.id] ? "excluded" : ""));
      tr.setAttribute("data-run", run.id);
      var box = el("input");
      box.type = "checkbox";
      box.className = "run-toggle";
      box.checked = !state.excluded[run.id];
      box.setAttribute("data-run", run.id);
      box.setAttribute("aria-label", "show run " + run.label);
      box.addEventListener("change", function () {
        if (box.checked) { delete state.excluded[run.id]; } else { state.excluded[run.id] = true; }
        render();
        var again = document.querySelector('input.run-toggle[data-run="' + CSS.escape(run.id) + '"]');
        if (again) { again.focus(); }
      });
      add(add(tr, el("td")), box);
      add(tr, el("td", "", run.label));
      add(tr, el("td", "", run.created || DASH));
      var ids = uniq(run.rows.map(function (r) { return r.run; }));
      var idCell = add(tr, el("td", "run-ids", ids.length > 1 ? ids.length + " runs" : ids[0]));
      idCell.setAttribute("title", ids.join("\n"));
      add(tr, el("td", "num", run.rows.length));
      add(tr, el("td", "", uniq(run.rows.map(function (r) { return r.model; })).join(", ")));
      add(tr, el("td", "", uniq(run.rows.map(function (r) { return r.boundary; })).join(", ") || DASH));
      var badges = add(tr, el("td"));
      uniq(run.rows.map(function (r) { return r.badge; })).forEach(function (b) {
        var span = add(badges, el("span", "badge neighbor-badge" + (b !== "\u00b10/0" && b !== "\u00b1?" ? " on" : ""), b));
        span.setAttribute("title", "neighbor expansion: previous/next chunks around each hit");
      });
      add(tr, el("td", "", uniq(run.rows.map(function (r) { return r.chunkSize; })).join(", ") || DASH));
      add(tr, el("td", "num", uniq(run.rows.map(function (r) { return r.topK; })).join(", ") || DASH));
      var sets = uniq(run.rows.map(function (r) { return r.questionSet; }));
      var setNames = uniq(run.rows.map(function (r) { return r.questionSetName || (r.questionSet ? short(String(r.questionSet), 12) : null); }));
      add(tr, el("td", "", setNames.join("; ") || DASH))
        .setAttribute("title", sets.join("\n"));
    });
  }

  // What differs between the compared results besides the configurations themselves. The corpus model is one
  // of the two things a configuration is made of, so it never counts; a boundary model counts when one
  // configuration was scored with several (each semantic configuration may have its own).
  function mismatches(rows) {
    var out = [];
    uniq(rows.map(configId)).forEach(function (cid) {
      var mine = rows.filter(function (r) { return configId(r) === cid; });
      var boundary = uniq(mine.map(function (r) { return r.boundary; }));
      if (boundary.length > 1) { out.push("boundary model of " + configLabel(mine[0]) + " (" + boundary.join(", ") + ")"); }
    });
    var neighbors = uniq(rows.filter(function (r) { return r.prev !== null || r.next !== null; })
      .map(function (r) { return r.badge; }));
    if (neighbors.length > 1) { out.push("neighbor settings (" + neighbors.join(", ") + ")"); }
    var sets = uniq(rows.map(function (r) { return r.questionSet; }));
    if (sets.length > 1) {
      var names = uniq(rows.map(function (r) { return r.questionSetName || String(r.questionSet); }));
      out.push("question set (" + (names.length > 1 ? names : sets).join("; ") + ")");
    }
    var topk = uniq(rows.map(function (r) { return r.topK; }));
    if (topk.length > 1) { out.push("top k (" + topk.join(", ") + ")"); }
    var corpora = uniq(rows.map(function (r) { return r.corpus; }));
    if (corpora.length > 1) { out.push("parsed corpus (" + corpora.join(", ") + ")"); }
    uniq(rows.map(function (r) { return r.strategy; })).forEach(function (s) {
      var mine = rows.filter(function (r) { return r.strategy === s; });
      var fps = uniq(mine.map(function (r) { return r.settings; }));
      if (fps.length > 1) { out.push(s + " chunker settings (" + fps.join(", ") + ")"); }
      var contexts = uniq(mine.map(function (r) { return r.context; }));
      if (contexts.length > 1) { out.push(s + " context source (" + contexts.join(" vs ") + ")"); }
    });
    return out;
  }

  function renderWarning(rows) {
    var box = document.getElementById("mismatch-warning");
    box.textContent = "";
    var found = mismatches(rows);
    box.hidden = !found.length;
    if (!found.length) { return; }
    add(box, el("strong", "", "The compared runs are not like for like."));
    add(box, el("span", "", " They differ in: "));
    var ul = add(box, el("ul"));
    found.forEach(function (f) { add(ul, el("li", "", f)); });
    add(box, el("span", "note", "Differences in the numbers may come from these settings rather than from the chunking. " +
      "Hide runs (untick them above) to compare like with like."));
  }

  function scale(rows) {
    var values = rows.map(value).filter(function (v) { return v !== null; });
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    return { lo: values.length ? lo : 0, hi: values.length ? hi : 1 };
  }
  function shade(v, s, higherIsBetter) {
    var t = s.hi > s.lo ? (v - s.lo) / (s.hi - s.lo) : 0.6;
    if (!higherIsBetter) { t = 1 - t; }
    var a = [247, 251, 255], b = [8, 81, 156];
    var c = a.map(function (x, i) { return Math.round(x + (b[i] - x) * (0.1 + 0.9 * t)); });
    return { bg: "rgb(" + c.join(",") + ")", fg: t > 0.5 ? "#fff" : "#111" };
  }

  function renderHeatmap(rows) {
    var table = document.getElementById("heatmap");
    table.textContent = "";
    var info = metricInfo(state.metric);
    var cols = runs.filter(function (run) { return rows.some(function (r) { return r.batch === run.id; }); });
    // the leaderboard's order (the colours' order), then the others by name
    var order = Object.keys(D.colors || {});
    var place = function (cid) { var i = order.indexOf(cid); return i < 0 ? order.length : i; };
    var configs = uniq(rows.map(configId)).sort(function (a, b) {
      return place(a) - place(b) || (a < b ? -1 : a > b ? 1 : 0);
    });
    var s = scale(rows);
    var head = add(add(table, el("thead")), el("tr"));
    add(head, el("th", "", "configuration \\ run"));
    cols.forEach(function (run) {
      var th = add(head, el("th"));
      th.setAttribute("scope", "col");
      th.setAttribute("title", run.label);
      add(th, el("div", "", short(run.label, 24)));
      add(th, el("div", "note", (run.created || "").slice(0, 16)));
      uniq(run.rows.map(function (r) { return r.badge; })).forEach(function (b) { add(th, el("span", "badge neighbor-badge", b)); });
    });
    var body = add(table, el("tbody"));
    configs.forEach(function (cid) {
      var sample = rows.filter(function (r) { return configId(r) === cid; })[0];
      var tr = add(body, el("tr"));
      tr.setAttribute("data-config", cid);
      labelled(tr, "th", sample).setAttribute("scope", "row");
      cols.forEach(function (run) {
        var r = rows.filter(function (x) { return x.batch === run.id && configId(x) === cid; })[0];
        var td = add(tr, el("td"));
        if (!r || value(r) === null) { td.className = "empty"; td.setAttribute("title", "no result"); return; }
        var b = add(td, el("button", "", fmt(info.kind, value(r))));
        b.type = "button";
        if (r.n !== null) { add(b, el("span", "ci", "n=" + r.n)); }  // the questions the value is over
        var colors = shade(value(r), s, info.higherIsBetter);
        b.style.backgroundColor = colors.bg;
        b.style.color = colors.fg;
        b.setAttribute("data-run", r.run);
        b.setAttribute("data-config", cid);
        b.setAttribute("aria-pressed", state.candidates.indexOf(cellId(r)) >= 0 ? "true" : "false");
        b.setAttribute("aria-label", configLabel(r) + ", run " + r.run + ": " + info.label + " " + fmt(info.kind, value(r)));
        b.setAttribute("title", info.label + " " + fmt(info.kind, value(r)) + " \u00b7 neighbors " + r.badge +
          (r.boundary ? " \u00b7 boundary " + r.boundary : "") + (r.n !== null ? " \u00b7 " + r.n + " questions" : ""));
        b.addEventListener("click", function () {
          var id = cellId(r), at = state.candidates.indexOf(id);
          if (at >= 0) { state.candidates.splice(at, 1); } else { state.candidates.push(id); }
          render();
          var again = document.querySelector('#heatmap button[data-run="' + CSS.escape(r.run) + '"][data-config="' + CSS.escape(cid) + '"]');
          if (again) { again.focus(); }
        });
      });
    });
    if (!configs.length) { add(add(body, el("tr")), el("td", "note", "No run left: show runs or change the filter.")); }
  }

  function renderCandidates(rows) {
    var table = document.getElementById("candidates");
    var note = document.getElementById("candidate-note");
    table.textContent = "";
    var picked = rows.filter(function (r) { return state.candidates.indexOf(cellId(r)) >= 0; });
    var info = metricInfo(state.metric);
    if (!picked.length) {
      // the best values first; equal values in the leaderboard's order, as the heat map lists them
      var order = Object.keys(D.colors || {});
      var place = function (r) { var i = order.indexOf(configId(r)); return i < 0 ? order.length : i; };
      picked = rows.filter(function (r) { return value(r) !== null; }).sort(function (a, b) {
        return (info.higherIsBetter ? value(b) - value(a) : value(a) - value(b)) || place(a) - place(b);
      }).slice(0, 3);
      note.textContent = "No cell picked: showing the three best cells for " + info.label + ". Pick cells in the heat map to choose your own.";
    } else {
      note.textContent = picked.length + " candidate(s) picked in the heat map.";
    }
    var diff = mismatches(picked);
    if (diff.length) { add(note, el("strong", "bad", " These candidates differ in: " + diff.join("; ") + ".")); }
    var head = add(add(table, el("thead")), el("tr"));
    // n: the questions each mean of the row is over, as under each heat-map value
    ["configuration", "run", "created", "neighbors", "boundary model", "chunk size", "top k", "n"].forEach(function (h) { add(head, el("th", "", h)); });
    D.metrics.forEach(function (m) { add(head, el("th", "", m.label)); });
    var best = {};
    D.metrics.forEach(function (m) {
      var vs = picked.map(function (r) { return r.metrics[m.name]; }).filter(function (v) { return v !== null && v !== undefined; });
      best[m.name] = vs.length ? (m.higherIsBetter ? Math.max.apply(null, vs) : Math.min.apply(null, vs)) : null;
    });
    var body = add(table, el("tbody"));
    picked.forEach(function (r) {
      var tr = add(body, el("tr"));
      tr.setAttribute("data-cell", cellId(r));
      labelled(add(tr, el("td")), "span", r);
      add(tr, el("td", "", r.batchLabel)).setAttribute("title", "experiment run id " + r.run);
      add(tr, el("td", "", r.created || DASH));
      add(add(tr, el("td")), el("span", "badge neighbor-badge", r.badge));
      add(tr, el("td", "", r.boundary || DASH));
      add(tr, el("td", "", r.chunkSize === null ? DASH : r.chunkSize));
      add(tr, el("td", "num", r.topK === null ? DASH : r.topK));
      add(tr, el("td", "num", r.n === null ? DASH : r.n));
      D.metrics.forEach(function (m) {
        var v = r.metrics[m.name];
        var td = add(tr, el("td", "num", fmt(m.kind, v)));
        if (v !== null && v !== undefined && best[m.name] !== null && picked.length > 1) {
          var d = v - best[m.name];
          var span = add(td, el("span", "delta " + (d === 0 ? "good" : "bad"),
            d === 0 ? " best" : " (" + (d > 0 ? "+" : "") + fmt(m.kind, d) + ")"));
          span.setAttribute("title", "difference to the best candidate");
        }
      });
    });
  }

  function renderTrend(rows) {
    var chart = document.getElementById("trend");
    chunkbench.clear(chart);
    var info = metricInfo(state.metric);
    var cols = runs.filter(function (run) { return rows.some(function (r) { return r.batch === run.id; }); });
    // the leaderboard's order (the colours' order), then the others by name
    var order = Object.keys(D.colors || {});
    var place = function (cid) { var i = order.indexOf(cid); return i < 0 ? order.length : i; };
    var configs = uniq(rows.map(configId)).sort(function (a, b) {
      return place(a) - place(b) || (a < b ? -1 : a > b ? 1 : 0);
    });
    var longest = Math.max.apply(null, [10].concat(configs.map(function (cid) {
      return configLabel(rows.filter(function (r) { return configId(r) === cid; })[0]).length;
    })));
    var left = 50, top = 20, plotW = Math.max(300, 90 * cols.length), plotH = 200, legendW = 40 + 7 * longest;
    var width = left + plotW + legendW, height = Math.max(top + plotH + 60, top + 16 * configs.length + 20);
    chart.setAttribute("width", width);
    chart.setAttribute("height", height);
    chart.setAttribute("viewBox", "0 0 " + width + " " + height);
    var s = scale(rows);
    var lo = info.kind === "fraction" ? 0 : s.lo, hi = info.kind === "fraction" ? Math.max(1, s.hi) : (s.hi > s.lo ? s.hi : s.lo + 1);
    function x(i) { return left + (cols.length > 1 ? (plotW - 40) * i / (cols.length - 1) + 20 : plotW / 2); }
    function y(v) { return top + plotH - (v - lo) / (hi - lo) * plotH; }
    svg("rect", { x: left, y: top, width: plotW, height: plotH, fill: "#fafafa", stroke: "#ccc" }, chart);
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) {
      var v = lo + (hi - lo) * f;
      svg("line", { x1: left, x2: left + plotW, y1: y(v), y2: y(v), stroke: "#e3e3e3" }, chart);
      var t = svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, chart);
      t.textContent = fmt(info.kind, v);
    });
    cols.forEach(function (run, i) {
      var t = svg("text", { x: x(i), y: top + plotH + 16, "text-anchor": "middle" }, chart);
      t.textContent = short(run.label, 14);
      var d = svg("text", { x: x(i), y: top + plotH + 30, "text-anchor": "middle", fill: "#777" }, chart);
      d.textContent = (run.created || "").slice(0, 10);
    });
    configs.forEach(function (cid, k) {
      var color = D.colors[cid] || "#555";
      var points = [];
      var sample = null;
      cols.forEach(function (run, i) {
        var r = rows.filter(function (q) { return q.batch === run.id && configId(q) === cid; })[0];
        if (r && value(r) !== null) { points.push([x(i), y(value(r)), r]); sample = r; }
      });
      if (!sample) { return; }
      if (points.length > 1) {
        svg("polyline", { points: points.map(function (p) { return p[0] + "," + p[1]; }).join(" "), fill: "none",
          stroke: color, "stroke-width": 2 }, chart);
      }
      points.forEach(function (p) {
        var c = svg("circle", { cx: p[0], cy: p[1], r: 4, fill: color }, chart);
        var title = svg("title", {}, c);
        title.textContent = configLabel(p[2]) + " \u00b7 " + p[2].run + ": " + fmt(info.kind, value(p[2]));
      });
      var ly = top + 12 + 16 * k;
      svg("rect", { x: left + plotW + 14, y: ly - 9, width: 10, height: 10, fill: color }, chart);
      var label = svg("text", { x: left + plotW + 30, y: ly, "class": "config-label", "data-configuration": sample.key }, chart);
      label.textContent = configLabel(sample);
    });
    var axis = svg("text", { x: left, y: top - 6 }, chart);
    axis.textContent = info.label + " per run (oldest left)";
  }

  function render() {
    var rows = visibleRows();
    state.candidates = state.candidates.filter(function (id) { return rows.some(function (r) { return cellId(r) === id; }); });
    renderRunList();
    renderWarning(rows);
    renderHeatmap(rows);
    renderCandidates(rows);
    renderTrend(rows);
  }

  renderControls();
  render();
  document.documentElement.setAttribute("data-board", "ready");
})();
