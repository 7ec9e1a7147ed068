"use strict";
// The page's behaviour: tooltips on the text view's tokens, the token explorer (search,
// merge tree, the tokens built on one) and the vocabulary panels. Token text only ever
// reaches the page through textContent, never innerHTML: a token may be "<script>".

var root = document.getElementById(rootId);
if (!root || root.getAttribute("data-bpv-ready")) return;
root.setAttribute("data-bpv-ready", "1");

function $(role) { return root.querySelector('[data-role="' + role + '"]'); }

var DATA = JSON.parse($("data").textContent);
var PAGE = 200;  // rows a list shows at a time: the vocabulary may hold 200,000 tokens
var fmt = function (n) { return n.toLocaleString("en-US"); };

// ---- the vocabulary, rebuilt from its merges (see bpekit/viz/data.py) ----------------

function b64bytes(s) {
  var bin = atob(s), n = bin.length, out = new Uint8Array(n);
  for (var i = 0; i < n; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function buildVocab(v) {
  var nv = v.n_vocab, nm = v.n_merges, w = v.width, none = Math.pow(2, 8 * w) - 1;
  var planes = b64bytes(v.merges), total = 2 * nm, vals = new Int32Array(total);
  for (var k = 0; k < total; k++) {
    var x = 0;
    for (var p = w - 1; p >= 0; p--) x = x * 256 + planes[p * total + k];
    vals[k] = x === none ? -1 : x;
  }
  var L = vals.subarray(0, nm), R = vals.subarray(nm), M = new Int32Array(nm);
  var expected = 256, j = 0, jumps = v.jumps;
  for (k = 0; k < nm; k++) {
    var id = j < jumps.length && jumps[j][0] === k ? jumps[j++][1] : expected;
    expected = id + 1;
    M[k] = id === none ? -1 : id;
  }
  var len = new Int32Array(nv).fill(-1), madeBy = new Int32Array(nv).fill(-1);
  var leaves = v.leaves.map(function (leaf) {
    var b = b64bytes(leaf[1]);
    len[leaf[0]] = b.length;
    return [leaf[0], b];
  });
  var built = new Uint8Array(nm);
  for (k = 0; k < nm; k++) {
    var m = M[k], l = L[k], r = R[k];
    if (m < 0 || l < 0) continue;
    if (madeBy[m] < 0) madeBy[m] = k;
    if (len[m] < 0 && len[l] >= 0 && len[r] >= 0) { len[m] = len[l] + len[r]; built[k] = 1; }
  }
  var off = new Int32Array(nv), size = 0;
  for (var t = 0; t < nv; t++) if (len[t] > 0) { off[t] = size; size += len[t]; }
  var pool = new Uint8Array(size);
  leaves.forEach(function (leaf) { pool.set(leaf[1], off[leaf[0]]); });
  for (k = 0; k < nm; k++) {
    if (!built[k]) continue;
    pool.copyWithin(off[M[k]], off[L[k]], off[L[k]] + len[L[k]]);
    pool.copyWithin(off[M[k]] + len[L[k]], off[R[k]], off[R[k]] + len[R[k]]);
  }
  var special = new Map();
  v.specials.forEach(function (s) { special.set(s[1], s[0]); });
  var count = 0;
  for (t = 0; t < nv; t++) if (len[t] >= 0) count++;
  return { nv: nv, nm: nm, L: L, R: R, M: M, len: len, off: off, pool: pool, madeBy: madeBy,
    special: special, isRanks: v.is_ranks, count: count };
}

var V = buildVocab(DATA.vocab);
var decoder = new TextDecoder("utf-8", { fatal: true });
var strs = [];  // id -> its text, null when its bytes are no text on their own

function has(id) { return id >= 0 && id < V.nv && V.len[id] >= 0; }
function bytesOf(id) { return V.pool.subarray(V.off[id], V.off[id] + V.len[id]); }
function strOf(id) {
  if (strs[id] === undefined) {
    try { strs[id] = decoder.decode(bytesOf(id)); } catch (e) { strs[id] = null; }
  }
  return strs[id];
}
function hexOf(id, limit) {
  var b = bytesOf(id), n = Math.min(b.length, limit || 1e9), out = [];
  for (var i = 0; i < n; i++) out.push((b[i] < 16 ? "0" : "") + b[i].toString(16));
  return out.join(" ") + (b.length > n ? " …" : "");
}
// A token's rank: tiktoken's rank is the id; a merges vocabulary's is its merge's index.
function rankOf(id) {
  if (V.special.has(id)) return null;
  if (V.isRanks) return id;
  return V.madeBy[id] >= 0 ? V.madeBy[id] : null;
}

// ---- building DOM --------------------------------------------------------------------

function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

var MARKS = { " ": "·", "\t": "→", "\n": "↵", "\r": "␍", "\u00a0": "⍽" };
var INVISIBLE = /[\s\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2060\ufeff]+/g;
function markOf(c) {
  if (MARKS[c]) return MARKS[c];
  var code = c.charCodeAt(0);
  if (code < 32) return String.fromCharCode(0x2400 + code);
  if (code === 127) return "␡";
  if (/\s/.test(c)) return "·";
  return "<U+" + code.toString(16).toUpperCase().padStart(4, "0") + ">";
}
// Appends `text` to `node` with its invisible characters as faint marks (as marks.py).
function appendMarked(node, text) {
  var at = 0, m;
  INVISIBLE.lastIndex = 0;
  while ((m = INVISIBLE.exec(text)) !== null) {
    if (m.index > at) node.appendChild(document.createTextNode(text.slice(at, m.index)));
    node.appendChild(el("i", null, Array.from(m[0]).map(markOf).join("")));
    at = m.index + m[0].length;
  }
  if (at < text.length) node.appendChild(document.createTextNode(text.slice(at)));
}
function fillToken(node, id, hexLimit) {
  if (V.special.has(id)) { node.classList.add("bpv-sp"); node.textContent = V.special.get(id); return; }
  var s = strOf(id);
  if (s === null) { node.classList.add("bpv-x"); node.textContent = hexOf(id, hexLimit); return; }
  appendMarked(node, s);
}
function chip(id, big) {
  var c = el("span", "bpv-chip" + (big ? " bpv-big" : ""));
  fillToken(c, id, big ? 0 : 24);
  c.setAttribute("data-tok", id);
  c.title = "id " + id + (V.len[id] > 12 ? ": " + (V.special.get(id) || strOf(id) || hexOf(id, 64)) : "");
  return c;
}
function plural(n, what) { return fmt(n) + " " + what + (n === 1 ? "" : "s"); }
function idLabel(id) { return el("span", "bpv-id", fmt(id)); }

// A list that shows PAGE rows at a time: `make(i)` builds row i of `n`.
function lazyRows(container, n, make) {
  var rows = el("div", "bpv-rows"), shown = 0, more = el("button", "bpv-btn bpv-more");
  more.type = "button";
  function step() {
    var end = Math.min(n, shown + PAGE), frag = document.createDocumentFragment();
    for (; shown < end; shown++) frag.appendChild(make(shown));
    rows.appendChild(frag);
    more.hidden = shown >= n;
    more.textContent = "show " + fmt(Math.min(PAGE, n - shown)) + " more (" + fmt(n - shown) + " left)";
  }
  more.addEventListener("click", step);
  container.appendChild(rows);
  container.appendChild(more);
  step();
  return rows;
}

function mergeRow(k) {
  var row = el("div", "bpv-row");
  row.appendChild(el("span", "bpv-id", "#" + fmt(k)));
  if (V.L[k] < 0) { row.appendChild(el("span", "bpv-muted", "(not a merge of tokens)")); return row; }
  row.appendChild(chip(V.L[k]));
  row.appendChild(el("span", "bpv-op", "+"));
  row.appendChild(chip(V.R[k]));
  row.appendChild(el("span", "bpv-op", "→"));
  row.appendChild(chip(V.M[k]));
  row.appendChild(idLabel(V.M[k]));
  return row;
}
function tokenRow(id) {
  var row = el("div", "bpv-row");
  row.appendChild(idLabel(id));
  row.appendChild(chip(id));
  row.appendChild(el("span", "bpv-id", V.len[id] + " B"));
  return row;
}

// ---- the text view -------------------------------------------------------------------

var tv = $("text");
var spans = tv ? tv.querySelectorAll("[data-id]") : [];
var byId = null;  // id -> its spans, built on the first click
var placeOf = null;  // span -> its index, built on the first hover

function occurrences(id) {
  if (!byId) {
    byId = new Map();
    for (var i = 0; i < spans.length; i++) {
      var t = +spans[i].getAttribute("data-id");
      if (!byId.has(t)) byId.set(t, []);
      byId.get(t).push(spans[i]);
    }
  }
  return byId.get(id) || [];
}
var lit = [];
function highlight(id) {
  lit.forEach(function (s) { s.classList.remove("bpv-on"); });
  lit = id === null ? [] : occurrences(id);
  lit.forEach(function (s) { s.classList.add("bpv-on"); });
}

var tip = $("tip");
function showTip(span, x, y) {
  var id = +span.getAttribute("data-id");
  if (!placeOf) { placeOf = new Map(); for (var i = 0; i < spans.length; i++) placeOf.set(spans[i], i); }
  tip.textContent = "";
  var head = el("div");
  head.appendChild(chip(id));
  tip.appendChild(head);
  var facts = el("div", "bpv-tip-row");
  var rank = rankOf(id);
  facts.appendChild(el("b", null, "id " + fmt(id)));
  facts.appendChild(document.createTextNode(
    (rank === null ? "" : " · rank " + fmt(rank)) + " · " + V.len[id] + (V.len[id] === 1 ? " byte" : " bytes") +
    " · token " + fmt(placeOf.get(span) + 1) + " of " + fmt(spans.length)));
  tip.appendChild(facts);
  if (V.special.has(id) || strOf(id) !== null) {  // a partial token's chip shows its bytes already
    var bytes = el("div", "bpv-tip-row");
    bytes.appendChild(el("code", null, hexOf(id, 48)));
    tip.appendChild(bytes);
  }
  if (V.special.has(id)) tip.appendChild(el("div", "bpv-tip-row", "special token"));
  else if (strOf(id) === null) tip.appendChild(el("div", "bpv-tip-row", "partial UTF-8: part of a character that a neighbouring token completes"));
  tip.hidden = false;
  var w = tip.offsetWidth, h = tip.offsetHeight;
  var left = Math.min(x + 14, window.innerWidth - w - 8), top = y + 18;
  if (top + h > window.innerHeight - 8) top = y - h - 12;
  tip.style.left = Math.max(8, left) + "px";
  tip.style.top = Math.max(8, top) + "px";
}
function hideTip() { tip.hidden = true; }

if (tv) {
  tv.addEventListener("mouseover", function (e) {
    var s = e.target.closest("[data-id]");
    if (s && tv.contains(s)) showTip(s, e.clientX, e.clientY); else hideTip();
  });
  tv.addEventListener("mousemove", function (e) {
    if (tip.hidden) return;
    var w = tip.offsetWidth, h = tip.offsetHeight, top = e.clientY + 18;
    if (top + h > window.innerHeight - 8) top = e.clientY - h - 12;
    tip.style.left = Math.max(8, Math.min(e.clientX + 14, window.innerWidth - w - 8)) + "px";
    tip.style.top = Math.max(8, top) + "px";
  });
  tv.addEventListener("mouseleave", hideTip);
  tv.addEventListener("scroll", hideTip, { passive: true });
  tv.addEventListener("click", function (e) {
    var s = e.target.closest("[data-id]");
    if (!s || !tv.contains(s)) return;
    var r = s.getBoundingClientRect();
    showTip(s, e.clientX || r.left, e.clientY || r.bottom);  // a tap shows what a hover shows
    select(+s.getAttribute("data-id"), true);
  });
}
document.addEventListener("click", function (e) { if (!tv || !tv.contains(e.target)) hideTip(); });

// ---- the token explorer ----------------------------------------------------------------

var detail = $("detail"), results = $("results"), search = $("search"), back = $("back");
var history = [], current = null;

function usedBy(id) {
  var out = [];
  for (var k = 0; k < V.nm; k++) if (V.L[k] === id || V.R[k] === id) out.push(k);
  return out;
}

function treeNode(id, depth, openDepth) {
  var li = el("li"), node = el("span", "bpv-node"), k = V.madeBy[id];
  // (The depth bound only guards against a malformed vocabulary with an empty token.)
  var parts = k >= 0 && !V.special.has(id) && V.L[k] >= 0 && depth < 512;
  if (parts) {
    var toggle = el("button", "bpv-toggle", "−");
    toggle.type = "button";
    toggle.title = "fold";
    toggle.addEventListener("click", function () {
      var folded = li.classList.toggle("bpv-collapsed");
      toggle.textContent = folded ? "+" : "−";
    });
    node.appendChild(toggle);
  }
  node.appendChild(chip(id));
  node.appendChild(el("span", "bpv-id", "id " + fmt(id) + (parts ? " · merge #" + fmt(k) : V.len[id] === 1 ? " · byte" : "")));
  li.appendChild(node);
  if (parts) {
    var ul = el("ul");
    ul.appendChild(treeNode(V.L[k], depth + 1, openDepth));
    ul.appendChild(treeNode(V.R[k], depth + 1, openDepth));
    li.appendChild(ul);
    // Deep trees start folded below a few levels, so that the token's parts fit on screen.
    if (depth >= openDepth) { li.classList.add("bpv-collapsed"); node.firstChild.textContent = "+"; }
  }
  return li;
}
function treeSize(id, seen) {
  var k = V.madeBy[id];
  if (k < 0 || V.L[k] < 0 || V.special.has(id) || seen > 4000) return 1;
  return 1 + treeSize(V.L[k], seen + 1) + treeSize(V.R[k], seen + 1);
}

function section(title, extra) {
  var s = el("div", "bpv-section"), h = el("h3", null, title);
  if (extra) h.appendChild(el("span", "bpv-muted", extra));
  s.appendChild(h);
  return s;
}

function kv(list, key, value) {
  list.appendChild(el("dt", null, key));
  var dd = el("dd");
  if (typeof value === "string") dd.textContent = value; else dd.appendChild(value);
  list.appendChild(dd);
}

function select(id, fromText) {
  if (!has(id)) return;
  if (current !== null && current !== id) history.push(current);
  back.hidden = history.length === 0;
  current = id;
  highlight(id);
  detail.textContent = "";
  var head = el("div");
  head.appendChild(chip(id, true));
  if (V.special.has(id)) head.appendChild(el("span", "bpv-badge bpv-gold", "special"));
  else if (strOf(id) === null) head.appendChild(el("span", "bpv-badge bpv-warn", "partial UTF-8"));
  detail.appendChild(head);

  var list = el("dl", "bpv-kv"), rank = rankOf(id), k = V.madeBy[id];
  kv(list, "id", fmt(id));
  kv(list, "rank", rank !== null ? fmt(rank) : V.special.has(id) ? "— (special token)" :
    V.len[id] === 1 ? "— (a single byte)" : "— (no merge makes it)");
  if (k >= 0 && !V.special.has(id)) kv(list, "merge", "#" + fmt(k) + " of " + fmt(V.nm));
  kv(list, "length", V.len[id] + (V.len[id] === 1 ? " byte" : " bytes") + (strOf(id) ? ", " + plural(Array.from(strOf(id)).length, "character") : ""));
  var code = el("code", null, hexOf(id, 64));
  kv(list, "bytes", code);
  var n = occurrences(id).length;
  if (spans.length) kv(list, "in the text", n ? fmt(n) + (n === 1 ? " time" : " times") : "not in the text");
  detail.appendChild(list);

  var tree = section("How it was built");
  if (V.special.has(id)) tree.appendChild(el("p", "bpv-muted", "A special token: matched as a whole before any merge, never built from bytes."));
  else if (k < 0 || V.L[k] < 0) tree.appendChild(el("p", "bpv-muted", V.len[id] === 1 ? "A single byte: where every token starts." : "No merge builds this token: it is in the vocabulary as it is."));
  else {
    var size = treeSize(id, 0), ul = el("ul", "bpv-tree");
    ul.appendChild(treeNode(id, 0, size <= 63 ? 1e9 : 3));
    tree.appendChild(ul);
  }
  detail.appendChild(tree);

  var uses = usedBy(id), built = section("Tokens built on it", " " + fmt(uses.length));
  if (!uses.length) built.appendChild(el("p", "bpv-muted", "No merge uses this token."));
  else lazyRows(built, uses.length, function (i) { return mergeRow(uses[i]); });
  detail.appendChild(built);
  if (!fromText) {
    var first = occurrences(id)[0];
    if (first) first.scrollIntoView({ block: "nearest" });
  }
}

root.addEventListener("click", function (e) {
  var c = e.target.closest("[data-tok]");
  if (c && root.contains(c) && !c.classList.contains("bpv-big")) select(+c.getAttribute("data-tok"), false);
});
back.addEventListener("click", function () {
  if (!history.length) return;
  var id = history.pop();
  current = null;
  select(id, false);
  back.hidden = history.length === 0;
});

// ---- search --------------------------------------------------------------------------

var allIds = null;
function everyId() {
  if (!allIds) { allIds = []; for (var t = 0; t < V.nv; t++) if (V.len[t] >= 0) allIds.push(t); }
  return allIds;
}

function showResults(title, ids) {
  results.textContent = "";
  if (ids === null) return;
  var box = el("div", "bpv-results"), head = el("div", "bpv-results-head");
  head.appendChild(el("span", null, title));
  var close = el("button", "bpv-btn", "clear");
  close.type = "button";
  close.addEventListener("click", function () { search.value = ""; showResults("", null); clearBars(); });
  head.appendChild(close);
  box.appendChild(head);
  if (ids.length) lazyRows(box, ids.length, function (i) { return tokenRow(ids[i]); });
  results.appendChild(box);
}

function runSearch() {
  var q = search.value;
  clearBars();
  if (q === "") { showResults("", null); return; }
  var exact = [], starts = [], inside = [], ids = everyId(), asId = /^\s*\d+\s*$/.test(q) ? +q : -1;
  var lower = q.toLowerCase(), fold = lower === q;  // all lower case: match any case
  for (var i = 0; i < ids.length; i++) {
    var id = ids[i], s = V.special.has(id) ? V.special.get(id) : strOf(id);
    if (s === null || id === asId) continue;
    if (fold) s = s.toLowerCase();
    var at = s.indexOf(fold ? lower : q);
    if (at < 0) continue;
    (s.length === q.length ? exact : at === 0 ? starts : inside).push(id);
  }
  var found = exact.concat(starts, inside);
  if (has(asId)) found.unshift(asId);
  showResults(fmt(found.length) + (found.length === 1 ? " token matches " : " tokens match ") + JSON.stringify(q), found);
  var same = exact.filter(function (t) { return (V.special.get(t) || strOf(t)) === q; });
  if (has(asId)) select(asId, false);
  else if (same.length) select(same[0], false);
}
var timer = 0;
search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(runSearch, 180); });
search.addEventListener("keydown", function (e) {
  if (e.key === "Enter") { clearTimeout(timer); runSearch(); }
  if (e.key === "Escape") { search.value = ""; runSearch(); }
});

// ---- the vocabulary panels -----------------------------------------------------------

var bars = [];
function clearBars() { bars.forEach(function (b) { b.classList.remove("bpv-on"); }); }

(function histogram() {
  var box = $("hist"), counts = [], max = 0, longest = 0;
  for (var t = 0; t < V.nv; t++) {
    var n = V.len[t];
    if (n < 1 || V.special.has(t)) continue;
    counts[n] = (counts[n] || 0) + 1;
    if (n > longest) longest = n;
  }
  for (var i = 1; i <= longest; i++) max = Math.max(max, counts[i] || 0);
  var label = longest > 60 ? 10 : longest > 24 ? 5 : 1;
  for (i = 1; i <= longest; i++) {
    var c = counts[i] || 0, bar = el("div", "bpv-bar");
    bar.style.height = c ? Math.max(2, Math.round(108 * c / max)) + "px" : "0px";
    bar.title = i + (i === 1 ? " byte: " : " bytes: ") + fmt(c) + (c === 1 ? " token" : " tokens");
    if (i === 1 || i % label === 0) bar.appendChild(el("span", null, String(i)));
    (function (length, b) {
      b.addEventListener("click", function () {
        var ids = everyId().filter(function (t) { return V.len[t] === length && !V.special.has(t); });
        search.value = "";
        showResults(fmt(ids.length) + " tokens of " + length + (length === 1 ? " byte" : " bytes"), ids);
        clearBars();
        b.classList.add("bpv-on");
        results.scrollIntoView({ block: "nearest" });
      });
    })(i, bar);
    bars.push(bar);
    box.appendChild(bar);
  }
  if (!longest) box.appendChild(el("p", "bpv-muted", "No tokens."));
})();

(function specials() {
  var box = $("specials"), list = DATA.vocab.specials;
  if (!list.length) { box.appendChild(el("p", "bpv-muted", "This tokenizer has no special tokens.")); return; }
  lazyRows(box, list.length, function (i) { return tokenRow(list[i][1]); });
})();

(function mergeLists() {
  var first = $("first"), last = $("last"), nm = V.nm;
  if (!nm) {
    first.appendChild(el("p", "bpv-muted", "This tokenizer has no merges."));
    last.appendChild(el("p", "bpv-muted", "This tokenizer has no merges."));
    return;
  }
  lazyRows(first, nm, function (i) { return mergeRow(i); });
  lazyRows(last, nm, function (i) { return mergeRow(nm - 1 - i); });
})();

// A link to the page with "#token=ID" opens with that token selected.
var wanted = /^#token=(\d+)$/.exec(window.location.hash || "");
if (wanted) select(+wanted[1], false);
