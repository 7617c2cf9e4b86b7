// The review page of located evidence: a person accepts or rejects each located reference, then saves the
// decisions as a JSON file for `chunkbench questions review FILE --decisions DECISIONS`. Works offline: the
// data is embedded in the page, nothing is fetched or sent.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("review-data").textContent);
  var decisions = {}; // key -> "accept" | "reject"
  var storageKey = "chunkbench-review:" + data.question_set + ":" + data.file_sha256;
  try {
    var saved = window.localStorage && window.localStorage.getItem(storageKey);
    if (saved) { decisions = JSON.parse(saved) || {}; }
  } catch { decisions = {}; }

  function key(q, r) { return q.id + "\u001f" + r.document + "\u001f" + r.start + "\u001f" + r.end; }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") { node.textContent = attrs[name]; } else { node.setAttribute(name, attrs[name]); }
    });
    (children || []).forEach(function (child) { if (child) { node.appendChild(child); } });
    return node;
  }

  function remember() {
    try { if (window.localStorage) { window.localStorage.setItem(storageKey, JSON.stringify(decisions)); } }
    catch { /* private mode: decisions live in the page only */ }
    count();
  }

  function count() {
    var total = 0, accepted = 0, rejected = 0;
    data.questions.forEach(function (q) {
      q.located.forEach(function (r) {
        total += 1;
        var d = decisions[key(q, r)];
        if (d === "accept") { accepted += 1; } else if (d === "reject") { rejected += 1; }
      });
    });
    document.getElementById("counts").textContent = accepted + " accepted, " + rejected + " rejected, " +
      (total - accepted - rejected) + " undecided of " + total + " located reference(s)";
  }

  function setDecision(q, r, value, box) {
    var k = key(q, r);
    if (value) { decisions[k] = value; } else { delete decisions[k]; }
    box.className = "candidate" + (value ? " " + value : "");
    var inputs = box.querySelectorAll("input[type=radio]");
    for (var i = 0; i < inputs.length; i += 1) { inputs[i].checked = inputs[i].value === (value || ""); }
    remember();
  }

  function candidate(q, r, index) {
    var box = el("div", {"class": "candidate"});
    var name = "d-" + q.index + "-" + index;
    var choices = el("fieldset", {"aria-label": "decision"});
    [["accept", "Accept"], ["reject", "Reject"], ["", "Undecided"]].forEach(function (choice) {
      var input = el("input", {type: "radio", name: name, value: choice[0]});
      input.addEventListener("change", function () { setDecision(q, r, choice[0], box); });
      choices.appendChild(el("label", {}, [input, document.createTextNode(" " + choice[1])]));
    });
    box.appendChild(el("div", {"class": "head"}, [
      el("span", {"class": "score", text: "score " + Number(r.score).toFixed(2)}),
      el("span", {text: "found by " + r.located_by.split("+").join(" and ").replace(/_/g, " ")}),
      el("span", {text: r.document + " [" + r.start + ":" + r.end + "]"}),
      choices]));
    var text = el("div", {"class": "text"});
    text.appendChild(document.createTextNode(r.before ? "\u2026" + r.before : ""));
    text.appendChild(el("mark", {text: r.content}));
    text.appendChild(document.createTextNode(r.after ? r.after + "\u2026" : ""));
    box.appendChild(text);
    setDecision(q, r, decisions[key(q, r)] || "", box);
    return box;
  }

  function render() {
    var list = document.getElementById("questions");
    data.questions.forEach(function (q, qi) {
      q.index = qi;
      var labels = el("div", {"class": "labels"});
      Object.keys(q.labels || {}).forEach(function (name) {
        labels.appendChild(el("span", {text: name + ": " + q.labels[name]}));
      });
      var section = el("section", {"class": "question", id: "q-" + qi}, [
        el("h2", {text: q.id + ": " + q.question}),
        el("p", {"class": "answer", text: "Expected answer: " + (q.expected_answer || "(none)")}),
        labels,
        q.sources.length ? el("p", {"class": "note", text: "Source documents: " + q.sources.join(", ")}) : null]);
      q.located.forEach(function (r, i) { section.appendChild(candidate(q, r, i)); });
      list.appendChild(section);
    });
    count();
  }

  function decideAll(threshold, value) {
    var boxes = document.querySelectorAll("section.question");
    data.questions.forEach(function (q, qi) {
      var cards = boxes[qi].querySelectorAll(".candidate");
      q.located.forEach(function (r, i) {
        if (threshold === null || Number(r.score) >= threshold) { setDecision(q, r, value, cards[i]); }
      });
    });
  }

  function save() {
    var out = [];
    data.questions.forEach(function (q) {
      q.located.forEach(function (r) {
        var d = decisions[key(q, r)];
        if (d) { out.push({question_id: q.id, document: r.document, start: r.start, end: r.end, decision: d}); }
      });
    });
    var body = JSON.stringify({chunkbench: "review-decisions", question_set: data.question_set,
      file: data.file, file_sha256: data.file_sha256, decisions: out}, null, 1);
    var link = el("a", {href: URL.createObjectURL(new Blob([body], {type: "application/json"})),
      download: data.decisions_name});
    document.body.appendChild(link);
    link.click();
    link.remove();
    document.getElementById("saved").textContent = out.length + " decision(s) saved as " + data.decisions_name +
      ": run chunkbench questions review " + data.file + " --decisions " + data.decisions_name;
  }

  document.getElementById("accept-above").addEventListener("click", function () {
    decideAll(Number(document.getElementById("threshold").value), "accept");
  });
  document.getElementById("clear").addEventListener("click", function () { decideAll(null, ""); });
  document.getElementById("save").addEventListener("click", save);
  render();
}());
