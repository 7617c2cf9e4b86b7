/* The retrieval inspector of the technical report: questions on the left, configurations as tabs, the chosen
 * result in the panel, built from the JSON of #inspector-data (see inspector.inspector_payload). */
(function () {
  "use strict";
  var el = chunkbench.el, add = chunkbench.add, fmt = chunkbench.fmt;
  var D = chunkbench.readJson("inspector-data");
  if (!D) { return; }
  var state = { q: 0, c: 0, filter: "", group: null };
  var list = document.getElementById("question-list");
  var picker = document.getElementById("strategy-picker");
  var panel = document.getElementById("inspector-panel");
  var filterBox = document.getElementById("question-filter");

  function result(q, c) { return D.results[q + ":" + c] || null; }
  function chunkLabel(chunk) {
    var where = chunk.doc === null ? "" : " \u00b7 " + chunk.doc + " [" + chunk.start + "\u2013" + chunk.end + ")";
    return chunk.id + where;
  }
  function highlighted(text, ranges, located) {
    var box = el("div", "chunk-text");
    box.setAttribute("dir", "auto");
    if (text === null || text === undefined) {
      box.textContent = "(the chunk text is not in the chunks table)";
      box.classList.add("note");
      return box;
    }
    if (!ranges || !ranges.length) { box.textContent = text; return box; }
    var chars = Array.from(text);
    var at = 0;
    ranges.forEach(function (r) {
      if (r[0] > at) { box.appendChild(document.createTextNode(chars.slice(at, r[0]).join(""))); }
      var mark = add(box, el("mark", located ? "evidence located" : "evidence", chars.slice(r[0], r[1]).join("")));
      mark.setAttribute("title", located ? "evidence located by chunkbench questions locate (not reviewed yet)"
                                         : "evidence (reference span)");
      at = r[1];
    });
    if (at < chars.length) { box.appendChild(document.createTextNode(chars.slice(at).join(""))); }
    return box;
  }

  function visibleQuestions() {
    var needle = state.filter.toLowerCase();
    var out = [];
    D.questions.forEach(function (q, i) {
      var hay = (q.set + " " + q.id + " " + (q.text || "")).toLowerCase();
      var inGroup = !state.group || ((q.groups || {})[state.group.dimension] || []).indexOf(state.group.group) >= 0;
      if (inGroup && (!needle || hay.indexOf(needle) >= 0)) { out.push(i); }
    });
    return out;
  }

  // at most LIST_WINDOW questions are in the list at once (a window around the selected one), so a run of
  // 10,000 questions opens as fast as one of 30; j/k, the arrows and the filter reach every question
  var LIST_WINDOW = 200;
  function listNote(text) {
    var note = add(list, el("li", "qmeta list-more", text));
    note.setAttribute("role", "presentation");
  }
  function renderQuestions() {
    list.textContent = "";
    var visible = visibleQuestions();
    var at = Math.max(0, visible.indexOf(state.q));
    var from = Math.max(0, Math.min(at - Math.floor(LIST_WINDOW / 2), visible.length - LIST_WINDOW));
    var to = Math.min(visible.length, from + LIST_WINDOW);
    if (from > 0) { listNote(from + " earlier question(s): k / Up, or the filter"); }
    visible.slice(from, to).forEach(function (i) {
      var q = D.questions[i];
      var item = add(list, el("li"));
      item.id = "question-" + i;
      item.setAttribute("role", "option");
      item.setAttribute("data-index", String(i));
      item.setAttribute("aria-selected", i === state.q ? "true" : "false");
      item.tabIndex = i === state.q ? 0 : -1;
      var r = result(i, state.c);
      var dot = add(item, el("span", "dot"));
      if (r && r.error) { dot.classList.add("miss"); dot.setAttribute("title", "failed"); }
      else if (r && typeof r.metrics.recall === "number") {
        dot.classList.add(r.metrics.recall > 0 ? "hit" : "miss");
        dot.setAttribute("title", "recall " + fmt("fraction", r.metrics.recall));
      }
      var text = add(item, el("span", "", q.text || "(no text)"));
      text.setAttribute("dir", "auto");
      add(item, el("div", "qmeta", q.set + " \u00b7 " + q.id));
      item.addEventListener("click", function () { select(i, state.c, "list"); });
    });
    if (to < visible.length) { listNote((visible.length - to) + " more question(s): j / Down, or the filter"); }
  }

  function renderPicker() {
    picker.textContent = "";
    D.configs.forEach(function (c, i) {
      var tab = add(picker, el("button"));
      tab.type = "button";
      tab.id = "config-tab-" + i;
      tab.setAttribute("role", "tab");
      tab.setAttribute("data-config", c.key);
      tab.setAttribute("aria-selected", i === state.c ? "true" : "false");
      tab.setAttribute("aria-controls", "inspector-panel");
      tab.tabIndex = i === state.c ? 0 : -1;
      add(tab, el("span", "config-label", c.label)).setAttribute("data-configuration", c.key);
      var badge = add(tab, el("span", "badge", c.badge));
      badge.setAttribute("title", "neighbor expansion: previous/next chunks added around each hit");
      tab.addEventListener("click", function () { select(state.q, i, "picker"); });
    });
  }

  function chips(parent, entries) {
    var box = add(parent, el("div", "chips"));
    entries.forEach(function (e) { add(box, el("span", "chip", e[0] + " " + e[1])); });
    return box;
  }

  // how this question's evidence was given: located evidence is marked apart from hand-written references
  function evidenceNote(panel, r) {
    var text = null;
    if (r.origin === "documents") {
      text = "Evidence: source documents only (" + (r.sources || []).join(", ") +
        "): scored by the document-level metrics.";
    } else if (r.located && r.located.length) {
      text = (r.origin === "mixed" ? "Evidence: hand-written and located references. " : "Evidence: located, ") +
        r.located.length + " span(s) found by chunkbench questions locate and not reviewed yet (" +
        r.located.map(function (x) {
          return x.by + (x.score !== null && x.score !== undefined ? " " + fmt("fraction", x.score) : "");
        }).join(", ") + "); highlighted as located evidence.";
    }
    if (text) {
      var p = add(panel, el("p", "note evidence-origin " + (r.origin || ""), text));
      p.id = "evidence-origin";
    }
  }

  function chunkList(parent, refs, heading, id) {
    var block = add(parent, el("div", "panel-block"));
    block.id = id;
    add(block, el("h4", "", heading + " (" + refs.length + ")"));
    var ol = add(block, el("ol", "chunks"));
    refs.forEach(function (ref) {
      var chunk = D.chunks[ref.chunk];
      var li = add(ol, el("li"));
      var head = add(li, el("div", "chunk-head"));
      add(head, el("span", "role " + ref.role, ref.role));
      var parts = [];
      if (ref.rank !== null && ref.rank !== undefined) { parts.push("#" + ref.rank); }
      if (ref.score !== null && ref.score !== undefined) { parts.push("score " + fmt("fraction", ref.score)); }
      parts.push(chunkLabel(chunk));
      if (ref.evChars) { parts.push(ref.evChars + " evidence characters" + (ref.evLocated ? " (located)" : "")); }
      add(head, el("span", "", parts.join(" \u00b7 ")));
      li.appendChild(highlighted(chunk.text, ref.ev, ref.evLocated));
      if (chunk.embedded) {
        var det = add(li, el("details"));
        add(det, el("summary", "note", "Text that was embedded (with added context)"));
        var emb = add(det, el("div", "chunk-text", chunk.embedded));
        emb.setAttribute("dir", "auto");
      }
    });
    if (!refs.length) { add(block, el("p", "note", "Nothing retrieved.")); }
  }

  function treeChunk(parent, label, index, evidence) {
    var li = add(parent, el("li"));
    if (index === null || index === undefined) { li.textContent = label + ": (unknown chunk)"; return; }
    var chunk = D.chunks[index];
    var det = add(li, el("details"));
    add(det, el("summary", "", label + ": " + chunkLabel(chunk)));
    det.appendChild(highlighted(chunk.text, evidence[index] || []));
  }

  function renderTree(parent, r) {
    var block = add(parent, el("div", "panel-block"));
    block.id = "expansion-tree";
    add(block, el("h4", "", "Expansion tree"));
    if (!r.tree.length) {
      add(block, el("p", "note", "No expansion tree was recorded for this question (column expansion_tree)."));
      return;
    }
    var evidence = {};
    r.hits.concat(r.context).forEach(function (ref) { if (ref.ev.length) { evidence[ref.chunk] = ref.ev; } });
    var ul = add(block, el("ul", "tree"));
    r.tree.forEach(function (node) {
      var li = add(ul, el("li"));
      var label = (evidence[node.hit] ? "hit #" : "retrieved #") + (node.rank === null ? "?" : node.rank) +
        (node.score === null ? "" : " (score " + fmt("fraction", node.score) + ")");
      treeChunk(li, label, node.hit, evidence);
      var sub = add(li, el("ul"));
      node.prev.forEach(function (i, k) { treeChunk(sub, "\u2190 previous " + (k + 1), i, evidence); });
      node.next.forEach(function (i, k) { treeChunk(sub, "\u2192 next " + (k + 1), i, evidence); });
      if (node.parent !== null && node.parent !== undefined) { treeChunk(sub, "\u2191 parent", node.parent, evidence); }
      if (!node.prev.length && !node.next.length && (node.parent === null || node.parent === undefined)) {
        add(sub, el("li", "note", "no neighbors or parent added"));
      }
    });
  }

  function keyValues(parent, title, values, kind, id) {
    var names = Object.keys(values);
    if (!names.length) { return; }
    var block = add(parent, el("div", "panel-block"));
    block.id = id;
    add(block, el("h4", "", title));
    var table = add(add(block, el("div", "scroll")), el("table"));
    names.forEach(function (name) {
      var tr = add(table, el("tr"));
      add(tr, el("th", "", name.replace(/_/g, " ")));
      add(tr, el("td", "num", fmt(kind, values[name])));
    });
  }

  function renderCompare(parent) {
    var block = add(parent, el("div", "panel-block compare"));
    add(block, el("h4", "", "This question in every configuration"));
    var table = add(add(block, el("div", "scroll")), el("table"));
    var names = Object.keys(D.metricLabels).filter(function (n) {
      return ["recall", "precision", "iou", "mrr", "ndcg", "answer_similarity"].indexOf(n) >= 0;
    });
    var head = add(table, el("tr"));
    add(head, el("th", "", "configuration"));
    names.forEach(function (n) { add(head, el("th", "", D.metricLabels[n])); });
    D.configs.forEach(function (c, i) {
      var r = result(state.q, i);
      var tr = add(table, el("tr", i === state.c ? "current" : ""));
      var td = add(tr, el("td"));
      var button = add(td, el("button", "config-label", c.label));
      button.setAttribute("data-configuration", c.key);
      button.type = "button";
      button.addEventListener("click", function () { select(state.q, i, "compare"); });
      names.forEach(function (n) {
        var v = r && !r.error ? r.metrics[n] : null;
        add(tr, el("td", "num", r && r.error ? "failed" : fmt(D.metricKinds[n], v)));
      });
    });
  }

  function renderPanel() {
    panel.textContent = "";
    var q = D.questions[state.q];
    var c = D.configs[state.c];
    panel.setAttribute("data-question", q ? q.set + "/" + q.id : "");
    panel.setAttribute("data-config", c ? c.key : "");
    panel.setAttribute("aria-labelledby", "config-tab-" + state.c);
    if (!q || !c) { add(panel, el("p", "note", "No questions were evaluated.")); return; }
    var title = add(panel, el("h3", "", q.text || "(no text)"));
    title.id = "inspector-question";
    title.setAttribute("dir", "auto");
    var meta = [q.set, q.id];
    if (q.category) { meta.push(q.category); }
    if (q.difficulty) { meta.push(q.difficulty); }
    meta.push(c.label);
    if (c.run) { meta.push("run " + c.run); }
    if (c.boundary) { meta.push("boundary model " + c.boundary); }
    add(panel, el("p", "meta", meta.join(" \u00b7 ")));
    var r = result(state.q, state.c);
    if (!r) { add(panel, el("p", "note", "This configuration has no result for this question.")); renderCompare(panel); return; }
    if (r.error) {
      var warn = add(panel, el("div", "warning"));
      warn.id = "question-error";
      warn.textContent = "This question failed: " + r.error;
    }
    chips(panel, Object.keys(r.metrics).filter(function (n) {
      return D.metricKinds[n] === "fraction" && n !== "hallucination_rate";  // judge scores: see the judge block
    }).map(function (n) {
      return [D.metricLabels[n] || n, fmt(D.metricKinds[n], r.metrics[n])];
    })).id = "question-metrics";
    evidenceNote(panel, r);
    renderCompare(panel);
    if (r.answer !== null || q.expected !== null || r.answerError) {
      var answers = add(panel, el("div", "answers"));
      answers.id = "answers";
      var gen = add(answers, el("div"));
      add(gen, el("h4", "", "Generated answer"));
      var genText = add(gen, el("div", "answer-text", r.answer !== null ? r.answer : (r.answerError ? "" : "(none)")));
      genText.id = "generated-answer";
      genText.setAttribute("dir", "auto");
      if (r.answerError) { add(gen, el("p", "bad", "answer failed: " + r.answerError)); }
      var exp = add(answers, el("div"));
      add(exp, el("h4", "", "Expected answer"));
      var expText = add(exp, el("div", "answer-text", q.expected !== null ? q.expected : "(not in the results)"));
      expText.id = "expected-answer";
      expText.setAttribute("dir", "auto");
    } else {
      add(panel, el("p", "note", "No LLM answer was generated for this run."));
    }
    var judgeNames = Object.keys(r.judge);
    if (judgeNames.length || r.judgeError) {
      var j = add(panel, el("div", "panel-block"));
      j.id = "judge";
      add(j, el("h4", "", "LLM judge"));
      chips(j, judgeNames.map(function (n) {
        return [(D.metricLabels[n] || n.replace(/_/g, " ")), n === "hallucination" ? fmt("", r.judge[n]) : fmt("score10", r.judge[n])];
      }));
      if (r.reasoning) { var reason = add(j, el("p", "", r.reasoning)); reason.setAttribute("dir", "auto"); }
      if (r.judgeError) { add(j, el("p", "bad", "judge failed: " + r.judgeError)); }
    }
    if (!r.hasReferences && r.hits.length) {
      add(panel, el("p", "note", "Reference spans were not recorded with these results (column references), " +
        "so evidence cannot be highlighted."));
    }
    chunkList(panel, r.hits, "Retrieved chunks", "retrieved-chunks");
    var extra = r.context.filter(function (ref) { return ref.role !== "hit" && ref.role !== "retrieved"; });
    if (extra.length) { chunkList(panel, r.context, "Context after expansion", "context-chunks"); }
    renderTree(panel, r);
    if (r.parentContext.length) {
      var pc = add(panel, el("div", "panel-block"));
      pc.id = "parent-context";
      add(pc, el("h4", "", "Parent context"));
      r.parentContext.forEach(function (t) { pc.appendChild(highlighted(t, [])); });
    }
    keyValues(panel, "Token usage", r.tokens, "count", "token-usage");
    keyValues(panel, "Latency", r.latency, "ms", "latency");
  }

  function writeHash() {
    try { history.replaceState(null, "", "#q=" + state.q + "&c=" + state.c); } catch { /* file:// may refuse */ }
  }

  function select(q, c, focusFrom) {
    state.q = Math.max(0, Math.min(q, D.questions.length - 1));
    state.c = Math.max(0, Math.min(c, D.configs.length - 1));
    renderQuestions();
    renderPicker();
    renderPanel();
    writeHash();
    if (focusFrom === "list") { var item = document.getElementById("question-" + state.q); if (item) { item.focus(); } }
    if (focusFrom === "picker") { var tab = document.getElementById("config-tab-" + state.c); if (tab) { tab.focus(); } }
  }

  function stepQuestion(delta, absolute) {
    var visible = visibleQuestions();
    if (!visible.length) { return; }
    var at = visible.indexOf(state.q);
    var next = absolute === "first" ? 0 : absolute === "last" ? visible.length - 1
      : Math.max(0, Math.min(visible.length - 1, (at < 0 ? 0 : at + delta)));
    select(visible[next], state.c, "list");
  }
  function stepConfig(delta, absolute) {
    var n = D.configs.length;
    if (!n) { return; }
    var next = absolute === "first" ? 0 : absolute === "last" ? n - 1 : (state.c + delta + n) % n;
    select(state.q, next, "picker");
  }

  list.setAttribute("tabindex", "-1");
  list.addEventListener("keydown", function (e) {
    var keys = { ArrowDown: [1], ArrowUp: [-1], Home: [0, "first"], End: [0, "last"] };
    if (keys[e.key]) { e.preventDefault(); stepQuestion(keys[e.key][0], keys[e.key][1]); }
  });
  picker.addEventListener("keydown", function (e) {
    var keys = { ArrowRight: [1], ArrowLeft: [-1], Home: [0, "first"], End: [0, "last"] };
    if (keys[e.key]) { e.preventDefault(); stepConfig(keys[e.key][0], keys[e.key][1]); }
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || e.altKey || e.ctrlKey || e.metaKey)) { return; }
    if (e.key === "j") { stepQuestion(1); } else if (e.key === "k") { stepQuestion(-1); }
    else if (e.key === "]") { stepConfig(1); } else if (e.key === "[") { stepConfig(-1); }
  });
  function refilter() {
    var visible = visibleQuestions();
    if (visible.length && visible.indexOf(state.q) < 0) { state.q = visible[0]; renderPanel(); renderPicker(); }
    renderQuestions();
  }
  if (filterBox) {
    filterBox.addEventListener("input", function () { state.filter = filterBox.value; refilter(); });
  }
  // the results-by-group filter: questions of one format, category, difficulty or document
  var groupBox = document.getElementById("group-filter");
  if (groupBox && D.groupOptions) {
    var GROUP_LABELS = { format: "document format", category: "category", difficulty: "difficulty",
                         document: "document" };
    var sections = {};
    D.groupOptions.forEach(function (g, i) {
      if (!sections[g.dimension]) {
        sections[g.dimension] = add(groupBox, el("optgroup"));
        sections[g.dimension].label = GROUP_LABELS[g.dimension] || g.dimension;
      }
      // the closed select shows only the option: it names its dimension too
      var option = add(sections[g.dimension], el("option", null, sections[g.dimension].label + ": " + g.group +
                                                  " (" + g.n + " question" + (g.n === 1 ? "" : "s") + ")"));
      option.value = String(i);
    });
    groupBox.addEventListener("change", function () {
      state.group = groupBox.value === "" ? null : D.groupOptions[parseInt(groupBox.value, 10)];
      refilter();
    });
  }
  var match = /q=(\d+)&c=(\d+)/.exec(location.hash || "");
  select(match ? parseInt(match[1], 10) : 0, match ? parseInt(match[2], 10) : 0, null);
  document.documentElement.setAttribute("data-inspector", "ready");
})();
