/* Shared helpers of the report pages. Loaded before each page's own script, inline like it.
 * Every element is built with createElement and textContent, never from markup, so no text taken
 * from documents, questions or answers can become part of the page. */
/* exported chunkbench */
var chunkbench = (function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var DASH = "\u2013";

  /** A new element of `tag` with an optional class and text. */
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  /** Append `child` to `parent` and return the child. */
  function add(parent, child) {
    parent.appendChild(child);
    return child;
  }

  /** A new SVG element with attributes, appended to `parent` when given. */
  function svg(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  /** Remove every child of `node`. */
  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
    return node;
  }

  /** The parsed JSON of a `<script type="application/json">` element, or null when it is absent. */
  function readJson(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  /** `text` cut to `n` characters with an ellipsis. */
  function short(text, n) {
    text = String(text);
    return text.length > n ? text.slice(0, n - 1) + "\u2026" : text;
  }

  /** The distinct non-empty values, in first-seen order. */
  function uniq(values) {
    var seen = {}, out = [];
    values.forEach(function (v) {
      if (v !== null && v !== undefined && !seen[v]) { seen[v] = true; out.push(v); }
    });
    return out;
  }

  /** A value as the reports print it: the same rules as the Python side (columns.fmt). */
  function fmt(kind, v) {
    if (v === null || v === undefined || (typeof v === "number" && !isFinite(v))) { return DASH; }
    if (typeof v === "boolean") { return v ? "yes" : "no"; }
    if (typeof v !== "number") { return String(v); }
    if (kind === "score10") { return v.toFixed(1); }
    if (kind === "ms") { return v.toFixed(1) + " ms"; }
    if (kind === "count") { return Math.round(v).toLocaleString("en"); }
    return v.toFixed(3);
  }

  return { el: el, add: add, svg: svg, clear: clear, readJson: readJson, short: short, uniq: uniq, fmt: fmt,
           DASH: DASH };
})();
