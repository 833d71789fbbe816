(function () {
  "use strict";
  // Every text goes through textContent: nothing from the run is parsed as HTML.
  var PAGE = 100;
  var CHUNK = {{ chunk }};
  var STATES = { ok: 1, error: 1, skipped: 1, interrupted: 1 };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    var key;
    for (key in attrs || {}) {
      if (key === "text") { node.textContent = attrs[key]; } else if (key === "cls") { node.className = attrs[key]; }
      else { node.setAttribute(key, attrs[key]); }
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  function put(parent, child) { if (child) { parent.appendChild(child); } }
  function fmt(value) { return value === null || value === undefined ? "–" : String(value); }
  function pill(state) { return el("span", { cls: "pill " + (STATES[state] || state), text: state }); }
  function outcomeCell(r) {
    // how the traced run went (reward, feedback), apart from how ACE processed the sample (the state)
    var cell = el("td", { cls: "outcome" });
    if (r[12] !== null && r[12] !== undefined) { cell.appendChild(el("span", { cls: "pill " + (r[12] >= 1 ? "ok" : "error"), text: "reward " + r[12] })); }
    if (r[13]) { cell.appendChild(el("div", { cls: "muted clip", text: r[13], title: r[13] })); }
    if (!cell.childNodes.length) { cell.appendChild(el("span", { cls: "muted", text: "–", title: "not judged: no reward or feedback" })); }
    return cell;
  }
  function field(label, value) {
    if (value === null || value === undefined || value === "") { return null; }
    return el("div", {}, el("b", { text: label + ": " }), String(value));
  }

  function Run(root) {
    this.root = root;
    this.data = JSON.parse(root.querySelector("script.run-data").textContent);
    this.details = {};
    this.traces = {};
    this.sort = { col: 0, dir: 1 };
    this.page = 0;
  }
  Run.prototype.chunk = function (kind, n) {
    var cache = kind === "detail" ? this.details : this.traces;
    if (!(n in cache)) {
      var node = this.root.querySelector("script." + kind + "-chunk[data-chunk='" + n + "']");
      cache[n] = node ? JSON.parse(node.textContent) : null;
    }
    return cache[n];
  };
  Run.prototype.detail = function (i) {
    var chunk = this.chunk("detail", Math.floor(i / CHUNK));
    return chunk ? chunk[i % CHUNK] : null;
  };
  Run.prototype.text = function (content) {
    // a text several traces share is kept once in the page: {"shared": i}
    if (content && typeof content === "object" && typeof content.shared === "number") {
      if (!this.shared) { this.shared = JSON.parse(this.root.querySelector("script.shared-text").textContent); }
      return this.shared[content.shared];
    }
    return typeof content === "string" ? content : JSON.stringify(content);
  };
  Run.prototype.trace = function (uid) {
    var n = this.data.trace_chunk[uid];
    if (n === undefined) { return null; }
    var chunk = this.chunk("trace", n);
    return chunk ? chunk[uid] : null;
  };

  // ---------------------------------------------------------------- a sample: transcript, reflection, sessions
  function transcript(trace, text) {
    var box = el("div", { cls: "transcript" });
    if (!trace) { box.appendChild(el("p", { cls: "muted", text: "The run folder holds no copy of this trace." })); return box; }
    put(box, field("Task", trace.question));
    var outcome = el("div", { cls: "outcome" });
    put(outcome, field("Reward", trace.reward));
    put(outcome, field("Feedback", trace.feedback));
    if (!outcome.childNodes.length) { outcome.appendChild(el("p", { cls: "muted", text: "No reward or feedback: the run was not judged." })); }
    box.appendChild(outcome);
    (trace.messages || []).forEach(function (m) {
      var role = String(m.role || "?");
      var body = text(m.content);
      var msg = el("div", { cls: "msg " + role }, el("div", { cls: "role", text: role + (m.name ? " · " + m.name : "") }));
      if (body && body !== "null") { msg.appendChild(el("pre", { text: body })); }
      (m.tool_calls || []).forEach(function (c) {
        var fn = c["function"] || {};
        msg.appendChild(el("pre", { cls: "mono", text: "→ " + fmt(fn.name) + "(" + fmt(fn.arguments) + ")" }));
      });
      box.appendChild(msg);
    });
    return box;
  }
  function session(s) {
    var box = el("div", { cls: "session" },
      el("h4", { text: s.name + " · " + fmt(s.duration_ms === null ? null : Math.round(s.duration_ms)) + " ms · " + s.status }));
    if (s.usage) { put(box, field("Usage", s.usage.requests + " requests, " + s.usage.input_tokens + " in, " + s.usage.output_tokens + " out tokens")); }
    s.calls.forEach(function (c) {
      var line = el("div", { cls: "call mono " + (c.result || "") }, c.signature);
      if (c.refusal) { line.appendChild(el("div", { cls: "error", text: "refused: " + c.refusal })); }
      box.appendChild(line);
    });
    if (!s.calls.length) { box.appendChild(el("div", { cls: "muted", text: "no tool call" })); }
    return box;
  }
  Run.prototype.renderSample = function (target, i) {
    var row = this.data.samples[i];
    var d = this.detail(i);
    target.textContent = "";
    target.appendChild(el("h3", {}, "Sample " + (i + 1) + " · ", el("span", { cls: "mono", text: row[1] }), " · epoch " + fmt(row[2]) + " ", pill(row[3])));
    if (!d) { return; }
    if (d.error) { target.appendChild(el("p", { cls: "error", text: (d.error_kind ? "[" + d.error_kind + "] " : "") + d.error })); }
    if (d.skipped) { put(target, field("Skipped", d.skipped)); }
    var r = d.reflection;
    var refl = el("div", { cls: "reflection" }, el("h4", { text: "Reflection" }));
    if (r) {
      put(refl, field("Key insight", r.key_insight));
      put(refl, field("Error", r.error_identification));
      put(refl, field("Root cause", r.root_cause_analysis));
      put(refl, field("Correct approach", r.correct_approach));
      (r.skill_tags || []).forEach(function (t) { refl.appendChild(el("div", { cls: "mono", text: "tag " + JSON.stringify(t) })); });
    } else { refl.appendChild(el("p", { cls: "muted", text: "no reflection" })); }
    target.appendChild(refl);
    var sessions = el("div", { cls: "sessions" }, el("h4", { text: "Sessions (" + d.sessions.length + ")" }));
    d.sessions.forEach(function (s) { sessions.appendChild(session(s)); });
    if (!d.sessions.length) { sessions.appendChild(el("p", { cls: "muted", text: "spans.jsonl holds no session of this sample" })); }
    target.appendChild(sessions);
    var ops = el("div", { cls: "operations" }, el("h4", { text: "Operations (" + d.operations.length + ")" }));
    d.operations.forEach(function (o) {
      var text = o.type + " " + fmt(o.skill_id) + (o.section ? " [" + o.section + "]" : "") + (o.delta !== null && o.delta !== undefined ? " delta " + JSON.stringify(o.delta) : "");
      var op = el("div", { cls: "call mono", text: text });
      ["issue", "insight", "reason"].forEach(function (k) { if (o[k]) { op.appendChild(el("div", { cls: "muted", text: k + ": " + o[k] })); } });
      if (o.keywords && o.keywords.length) { op.appendChild(el("div", { cls: "muted", text: "keywords: " + o.keywords.join(", ") })); }
      ops.appendChild(op);
    });
    d.refusals.forEach(function (f) { ops.appendChild(el("div", { cls: "call error mono", text: "refused " + f.tool + ": " + f.reason })); });
    target.appendChild(ops);
    var redacted = Object.keys(d.redactions || {});
    if (redacted.length) { put(target, field("Redacted", redacted.map(function (k) { return k + " ×" + d.redactions[k]; }).join(", "))); }
    var tr = el("div", { cls: "trace" }, el("h4", { text: "Transcript (redacted trace)" }));
    tr.appendChild(transcript(this.trace(row[1]), this.text.bind(this)));
    target.appendChild(tr);
  };

  // ---------------------------------------------------------------- the skills list and a skill's evidence
  Run.prototype.renderSkills = function () {
    var self = this;
    var list = this.root.querySelector(".skill-list");
    var query = this.root.querySelector(".skill-filter").value.toLowerCase();
    list.textContent = "";
    var shown = this.data.skills.filter(function (s) {
      return !query || [s.id, s.status, s.issue, s.insight || "", s.keywords.join(" ")].join(" ").toLowerCase().indexOf(query) >= 0;
    });
    shown.slice(0, 500).forEach(function (s) {
      var item = el("button", { cls: "skill-item", "data-skill": s.id, type: "button" },
        el("span", { cls: "mono", text: s.id }), " ", pill(s.status), el("div", { text: s.issue }));
      item.addEventListener("click", function () { self.showSkill(s.id); });
      list.appendChild(item);
    });
    if (shown.length > 500) { list.appendChild(el("p", { cls: "muted", text: "… " + (shown.length - 500) + " more: filter to narrow" })); }
    if (!shown.length) { list.appendChild(el("p", { cls: "muted", text: "no skill" })); }
  };
  Run.prototype.showSkill = function (id) {
    var self = this;
    var s = this.data.skills.filter(function (x) { return x.id === id; })[0];
    var box = this.root.querySelector(".skill-detail");
    this.root.querySelectorAll(".skill-item").forEach(function (b) { b.classList.toggle("selected", b.getAttribute("data-skill") === id); });
    box.textContent = "";
    box.appendChild(el("h3", {}, el("span", { cls: "mono", text: s.id }), " ", pill(s.status), " ", el("span", { cls: "muted", text: s.section })));
    put(box, field("Issue", s.issue));
    put(box, field("Insight", s.insight));
    put(box, field("Keywords", s.keywords.join(", ")));
    put(box, field("Counters", "used " + s.used + " · helpful " + s.helpful + " · harmful " + s.harmful + " · neutral " + s.neutral));
    put(box, field("Helpful evidence", s.helpful_traces.join(", ")));
    put(box, field("Harmful evidence", s.harmful_traces.join(", ")));
    if (s.quarantine) {
      put(box, field("Quarantined", s.quarantine.reason + " (since " + s.quarantine.timestamp + ")"));
      put(box, field("Harmful traces", s.quarantine.evidence.join(", ")));
    }
    put(box, field("Removed", s.removal_reason));
    var occ = el("div", { cls: "occurrences" }, el("h4", { text: "Occurrences (" + s.occurrences.length + ")" }));
    var view = el("div", { cls: "occurrence-sample" });
    var first = null;
    s.occurrences.forEach(function (o) {
      var label = fmt(o.op) + " · " + o.trace_uid + " · epoch " + fmt(o.epoch);
      var b = el("button", { cls: "occ", type: "button", text: label, title: o.learning || "" });
      if (o.sample === null) { b.disabled = true; b.title = "no sample of this run matches (the skill came with the starting skillbook)"; }
      else {
        b.addEventListener("click", function () {
          occ.querySelectorAll(".occ").forEach(function (x) { x.classList.remove("selected"); });
          b.classList.add("selected");
          self.renderSample(view, o.sample);
        });
        if (first === null) { first = b; }
      }
      occ.appendChild(b);
    });
    box.appendChild(occ);
    box.appendChild(view);
    if (first) { first.click(); }
  };

  // ---------------------------------------------------------------- the samples table: filter, sort, pages
  Run.prototype.rows = function () {
    var query = this.root.querySelector(".sample-filter").value.toLowerCase();
    var state = this.root.querySelector(".sample-state").value;
    var col = this.sort.col, dir = this.sort.dir;
    var rows = this.data.samples.filter(function (r) {
      if (state && r[3] !== state) { return false; }
      return !query || [r[1], r[11] || "", r[13] || "", r[4], r[6].join(" "), r[10] || ""].join(" ").toLowerCase().indexOf(query) >= 0;
    });
    return rows.slice().sort(function (a, b) {
      var x = a[col], y = b[col];
      if (Array.isArray(x)) { x = x.length; y = y.length; }
      if (x === y) { return a[0] - b[0]; }
      if (x === null) { return 1; } if (y === null) { return -1; }
      return (x < y ? -1 : 1) * dir;
    });
  };
  Run.prototype.renderSamples = function () {
    var self = this;
    var rows = this.rows();
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    var body = this.root.querySelector("table.samples tbody");
    body.textContent = "";
    rows.slice(this.page * PAGE, (this.page + 1) * PAGE).forEach(function (r) {
      var question = r[11] ? el("td", { cls: "question", title: r[1] }, el("div", { cls: "clip", text: r[11] }), el("div", { cls: "mono muted", text: r[1] }))
        : el("td", { cls: "mono", text: r[1] });
      var tr = el("tr", { "data-sample": r[0] },
        el("td", { cls: "n", text: r[0] + 1 }), question, outcomeCell(r),
        el("td", {}, pill(r[3])), el("td", { text: r[10] || r[4] }), el("td", { cls: "n", text: r[5] }),
        el("td", { cls: "mono", text: r[6].join(", ") }), el("td", { text: fmt(r[2]) }), el("td", { cls: "n", text: fmt(r[7]) }),
        el("td", { cls: "n", text: r[8] }), el("td", { cls: "n", text: r[9] }));
      tr.addEventListener("click", function () { self.openSample(r[0]); link("sample-" + (r[0] + 1)); });
      body.appendChild(tr);
    });
    var pager = this.root.querySelector(".pager");
    pager.textContent = "";
    var prev = el("button", { type: "button", text: "‹ previous" }), next = el("button", { type: "button", text: "next ›" });
    prev.disabled = this.page === 0; next.disabled = this.page >= pages - 1;
    prev.addEventListener("click", function () { self.page -= 1; self.renderSamples(); });
    next.addEventListener("click", function () { self.page += 1; self.renderSamples(); });
    pager.appendChild(prev);
    pager.appendChild(el("span", { text: "page " + (this.page + 1) + " of " + pages + " · " + rows.length + " samples" }));
    pager.appendChild(next);
    this.root.querySelectorAll("table.samples th[data-col]").forEach(function (th) {
      var c = Number(th.getAttribute("data-col"));
      th.classList.toggle("asc", c === self.sort.col && self.sort.dir === 1);
      th.classList.toggle("desc", c === self.sort.col && self.sort.dir === -1);
    });
  };
  Run.prototype.openSample = function (i) {
    if (!(i >= 0 && i < this.data.samples.length)) { return false; }
    var target = this.root.querySelector(".sample-detail");
    this.renderSample(target, i);
    target.scrollIntoView({ block: "nearest" });
    return true;
  };
  Run.prototype.bind = function () {
    var self = this;
    this.root.querySelector(".skill-filter").addEventListener("input", function () { self.renderSkills(); });
    this.root.querySelector(".sample-filter").addEventListener("input", function () { self.page = 0; self.renderSamples(); });
    this.root.querySelector(".sample-state").addEventListener("change", function () { self.page = 0; self.renderSamples(); });
    this.root.querySelectorAll("table.samples th[data-col]").forEach(function (th) {
      th.addEventListener("click", function () {
        var c = Number(th.getAttribute("data-col"));
        self.sort = { col: c, dir: self.sort.col === c ? -self.sort.dir : 1 };
        self.renderSamples();
      });
    });
    this.renderSkills();
    this.renderSamples();
  };

  // ---------------------------------------------------------------- tabs and the run selector
  var runs = [];
  var tab = "overview";
  function show() {
    var chosen = Number(document.getElementById("run-select").value);
    document.querySelectorAll("div.run").forEach(function (div) {
      var i = Number(div.getAttribute("data-run"));
      div.hidden = tab === "compare" || i !== chosen;
      if (!div.hidden && !runs[i]) { runs[i] = new Run(div); runs[i].bind(); }
    });
    document.querySelectorAll("section.tab").forEach(function (s) { s.hidden = s.getAttribute("data-tab") !== tab; });
    document.querySelectorAll("#tabs button").forEach(function (b) { b.classList.toggle("active", b.getAttribute("data-tab") === tab); });
  }
  // ---------------------------------------------------------------- deep links: #learning, #sample-4
  function link(hash) {
    if (location.hash !== "#" + hash) { history.replaceState(null, "", "#" + hash); }
  }
  function fromHash() {
    var hash = decodeURIComponent(location.hash.replace(/^#/, ""));
    var sample = /^sample-(\d+)$/.exec(hash);
    if (sample) {
      tab = "samples";
      show();
      var run = runs[Number(document.getElementById("run-select").value)];
      if (run) { run.openSample(Number(sample[1]) - 1); }
    } else if (/^[a-z]+$/.test(hash) && document.querySelector("#tabs button[data-tab='" + hash + "']")) {
      tab = hash;
      show();
    }
  }
  document.querySelectorAll("#tabs button").forEach(function (b) {
    b.addEventListener("click", function () { tab = b.getAttribute("data-tab"); show(); link(tab); });
  });
  document.getElementById("run-select").addEventListener("change", show);
  window.addEventListener("hashchange", fromHash);
  show();
  fromHash();
})();
