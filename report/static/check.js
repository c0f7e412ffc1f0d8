/* repromatrix "Check your versions" box: the answer of `repromatrix check PINS --from
 * results.json`, worked out here. A mirror of check/decide.py (verdict, smallest upgrade)
 * and check/candidates.py (the upgrades the table allows), over data/verdicts.js (the
 * rows check --from reads, each bug's workaround) and data/upgrades.js (the table's upgrade
 * paths), both made by check/page.py and loaded as scripts when the box is first used
 * (file:// works). Versions compare
 * in PEP 440 order as report/expect.py reads them. Text only through textContent. */
(function () {
  "use strict";
  var box = document.getElementById("check");
  if (!box) { return; }
  var form = document.getElementById("check-form");
  var answerNode = document.getElementById("check-answer");
  var D = null, U = null;  // data/verdicts.js and data/upgrades.js, once loaded
  var AFFECTED = "affected", NOT_AFFECTED = "not affected", CANNOT_TELL = "cannot tell";
  var SAME = "same versions", RULES = "expect rules", REQUIRES = "requirements", NOTHING = "nothing";
  var MARKS = { "affected": "AFFECTED", "not affected": "ok", "cannot tell": "?" };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  /* ------------------------------------------------------ versions (PEP 440 order) */
  var VERSION = /^\s*v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?(\d+)?)?(?:(?:-(\d+))|(?:[-_.]?(post|rev|r)[-_.]?(\d+)?))?(?:[-_.]?(dev)[-_.]?(\d+)?)?(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$/i;
  var RELEASE = /^\s*v?(\d+(?:\.\d+)*)/;
  var PHASES = { a: 0, alpha: 0, b: 1, beta: 1, c: 2, rc: 2, pre: 2, preview: 2 };

  /* packaging's Version: its sort key (epoch, release without trailing zeros, pre, post,
   * dev), or null when the text is not a version. */
  function parse(text) {
    var m = VERSION.exec(text);
    if (!m) { return null; }
    var release = m[2].split(".").map(Number);
    while (release.length > 1 && release[release.length - 1] === 0) { release.pop(); }
    var pre = m[3] ? [PHASES[m[3].toLowerCase()], Number(m[4] || 0)] : null;
    var post = m[5] !== undefined ? Number(m[5]) : (m[6] ? Number(m[7] || 0) : null);
    var dev = m[8] ? Number(m[9] || 0) : null;
    var preKey = pre ? pre : (post === null && dev !== null ? [-Infinity] : [Infinity]);
    return { key: [Number(m[1] || 0), release, preKey, post === null ? -Infinity : post,
                   dev === null ? Infinity : dev], release: release, epoch: Number(m[1] || 0) };
  }

  /* report.expect.normalize_version: the local part dropped; else the leading release. */
  function normalize(text) {
    if (text === null || text === undefined) { return null; }
    var raw = String(text).trim();
    var v = parse(raw.split("+")[0]);
    if (v) { return v; }
    var m = RELEASE.exec(raw);
    return m ? parse(m[1]) : null;
  }

  function cmpList(a, b) {
    for (var i = 0; i < Math.max(a.length, b.length); i++) {
      if (i >= a.length) { return -1; }
      if (i >= b.length) { return 1; }
      var x = a[i], y = b[i];
      var c = Array.isArray(x) ? cmpList(x, y) : (x < y ? -1 : (x > y ? 1 : 0));
      if (c) { return c; }
    }
    return 0;
  }
  function cmp(a, b) { return cmpList(a.key, b.key); }
  function vkey(text) { var v = normalize(text); return v ? JSON.stringify(v.key, replacer) : "None"; }
  function replacer(_, value) { return value === Infinity ? "inf" : (value === -Infinity ? "-inf" : value); }
  function plain(text) { return text === null || text === undefined || String(text) === "" ? null : String(text).split("+")[0]; }

  /* one specifier clause, as report.expect._holds reads it (null: not a specifier) */
  function holds(version, clause) {
    var m = /^\s*(~=|===|==|!=|<=|>=|<|>)\s*(\S+)\s*$/.exec(clause);
    if (!m) { return null; }
    var op = m[1], text = m[2];
    if (op === "===") { return null; }  // (no catalog rule uses it)
    var wild = (op === "==" || op === "!=") && /\.\*$/.test(text);
    var spec = parse(wild ? text.slice(0, -2) : text);
    if (!spec) { return null; }
    if (wild) {
      var same = spec.epoch === version.epoch && prefix(spec.release, version.release);
      return op === "==" ? same : !same;
    }
    var c = cmp(version, spec);
    if (op === ">=") { return c >= 0; }
    if (op === "<=") { return c <= 0; }
    if (op === ">") { return c > 0; }
    if (op === "<") { return c < 0; }
    if (op === "==") { return c === 0; }
    if (op === "!=") { return c !== 0; }
    var parts = /^(\d+(?:\.\d+)+)/.exec(text.replace(/^v/i, ""));  // ~=: >= V and == V's prefix.*
    if (!parts) { return null; }
    var stem = parse(parts[1].split(".").slice(0, -1).join("."));
    return c >= 0 && prefix(stem.release, version.release);
  }
  function prefix(want, have) {
    for (var i = 0; i < want.length; i++) { if ((have[i] || 0) !== want[i]) { return false; } }
    return true;
  }

  /* report.expect.when_holds over [[package, specifier], ...] */
  function whenHolds(when, versions) {
    for (var i = 0; i < when.length; i++) {
      var version = normalize(versions[when[i][0]]);
      if (!version) { return false; }
      var clauses = when[i][1].split(",").filter(function (c) { return c.trim(); });
      for (var j = 0; j < clauses.length; j++) {
        var ok = holds(version, clauses[j]);
        if (ok !== true) { return false; }
      }
    }
    return true;
  }

  function packageName(req) {
    var m = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(req);
    return m ? m[1].replace(/[-_.]+/g, "-").toLowerCase() : req;
  }

  /* ------------------------------------------------------------- check.decide */
  function sameKey(v) {
    if (v.ngc) { return JSON.stringify(["ngc", String(v.ngc)]); }
    return JSON.stringify([vkey(v.torch), vkey(v.torchvision), vkey(v.torch_tensorrt)]);
  }

  function decisive(row) { return row.status === "pass" || row.status === "fail" || (row.status === "skip" && row.evidence === D.standin); }

  function evidenceWords(row) {
    if (row.evidence === D.standin) { return D.evidence_words[D.standin]; }
    return D.evidence_words[row.gpu ? "gpu" : "cpu"];
  }

  function RowTable(rows) {
    this.same = new Map();
    this.release = new Map();
    this.count = 0;
    var self = this;
    rows.forEach(function (row) {
      self.count += 1;
      if (!decisive(row)) { return; }
      add(self.same, JSON.stringify([row.repro, sameKey(row.versions)]), row);
      ["torch", "torch_tensorrt"].forEach(function (axis) {
        if (row.versions[axis]) { add(self.release, JSON.stringify([row.repro, axis, vkey(row.versions[axis])]), row); }
      });
    });
  }
  function add(map, key, row) { if (!map.has(key)) { map.set(key, []); } map.get(key).push(row); }
  RowTable.prototype.closest = function (repro, versions, axis) {
    var same = this.same.get(JSON.stringify([repro, sameKey(versions)]));
    if (same && same.length) { return ["same versions", same]; }
    if (versions[axis]) {
      var found = this.release.get(JSON.stringify([repro, axis, vkey(versions[axis])]));
      if (found && found.length) { return ["same release", found]; }
    }
    return [NOTHING, []];
  };

  function best(rows) {  // real evidence over stand-in, then the newest (max: the first of equals)
    var top = rows[0];
    for (var i = 1; i < rows.length; i++) {
      var r = rows[i];
      if (cmpList([r.evidence === D.real ? 1 : 0, r.finished_at, r.cell],
                  [top.evidence === D.real ? 1 : 0, top.finished_at, top.cell]) > 0) { top = r; }
    }
    return top;
  }

  function keyPackage(bug) {
    var rules = bug.expect || [];
    for (var i = 0; i < rules.length; i++) {
      var when = rules[i].when || [];
      for (var j = 0; j < when.length; j++) {
        if (["torch_tensorrt", "torchvision", "torch"].indexOf(when[j][0]) >= 0) { return when[j][0]; }
      }
    }
    return "torch";
  }

  function missingPackages(bug, env, versions) {
    if (!env.complete) { return []; }
    var have = new Set();
    Object.keys(env.packages).forEach(function (k) { if (env.packages[k]) { have.add(packageName(k)); } });
    Object.keys(versions).forEach(function (k) { if (versions[k]) { have.add(packageName(k)); } });
    var out = [];
    (bug.requires || []).forEach(function (r) {
      var p = packageName(r);
      if (out.indexOf(p) < 0 && U.not_packages.indexOf(p) < 0 && !have.has(p)) { out.push(p); }
    });
    return out;
  }

  function recordOf(row) {
    return { cell: row.cell, stack: row.stack, versions: row.versions, status: row.status,
             evidence: row.evidence, workaround: row.workaround, run_id: row.run_id,
             finished_at: row.finished_at, host: row.host, level: evidenceWords(row) };
  }

  function verdict(bugId, bug, versions, env, table) {
    var missing = missingPackages(bug, env, versions);
    if (missing.length) {
      return { verdict: NOT_AFFECTED, basis: REQUIRES, inference: false, record: null, rule: null, agree: null,
               why: "needs " + missing.join(", ") + ", which " + (missing.length === 1 ? "is" : "are") + " not installed" };
    }
    var axis = keyPackage(bug);
    var found = table.closest(bugId, versions, axis), basis = found[0], rows = found[1];
    if (rows.length) {
      var row = best(rows);
      var said = row.status === "fail" ? AFFECTED : NOT_AFFECTED;
      var agree = rows.filter(function (r) { return (r.status === "fail") === (said === AFFECTED); }).length;
      var where = basis === SAME ? "the same versions" : "the same " + D.labels[axis] + " release (" + plain(versions[axis]) + ")";
      return { verdict: said, basis: basis === SAME ? basis : "same " + D.labels[axis] + " release",
               inference: false, record: recordOf(row), rule: null,
               agree: { records: rows.length, agreeing: agree },
               why: row.status + " on " + where + ": " + row.stack + " (" + evidenceWords(row) + ", " + row.finished_at.slice(0, 10) + ")" };
    }
    var rules = bug.expect || [];
    for (var i = 0; i < rules.length; i++) {
      var rule = rules[i];
      if (rule.when && whenHolds(rule.when, versions)) {
        var text = rule.when.map(function (kv) { return kv[0] + " " + kv[1]; }).join(", ") || "always";
        return { verdict: rule.said === "fail" ? AFFECTED : (rule.said === "pass" ? NOT_AFFECTED : CANNOT_TELL),
                 basis: RULES, inference: true, record: null,
                 rule: { when: text, status: rule.status, note: rule.note }, agree: null,
                 why: "no record this close; the repro's expectation for " + text + " is " + rule.said + " (an inference, not a record)" };
      }
    }
    return { verdict: CANNOT_TELL, basis: NOTHING, inference: false, record: null, rule: null, agree: null,
             why: "no record this close and no expectation applies" };
  }

  function answer(bugs, rows, env, candidates) {
    var table = new RowTable(rows);
    var out = bugs.map(function (pair) {
      var found = verdict(pair[0], pair[1], env.versions, env, table);
      return Object.assign({ id: pair[0], title: pair[1].title, upstream: pair[1].upstream, ignored: false },
                           found, { workaround: pair[1].workaround, fixed_in: null });
    });
    var affected = out.filter(function (b) { return b.verdict === AFFECTED; });
    var byId = new Map(bugs);
    return { format: D.answer_format, environment: env, records: table.count, bugs: out,
             affected: affected.map(function (b) { return b.id; }), ignored: [],
             upgrade: smallestUpgrade(byId, out, env, candidates, table), exit: affected.length ? 1 : 0 };
  }

  function firstMin(list, less) {
    var top = null;
    list.forEach(function (x) { if (top === null || less(x, top)) { top = x; } });
    return top;
  }

  function smallestUpgrade(bugs, found, env, candidates, table) {
    var affected = found.filter(function (b) { return b.verdict === AFFECTED && !b.ignored; });
    if (!affected.length) { return null; }
    var others = found.filter(function (b) { return b.verdict !== AFFECTED && !b.ignored; }).map(function (b) { return b.id; });
    function on(c, bugId) {
      return verdict(bugId, bugs.get(bugId), Object.assign({}, env.versions, c.versions), env, table).verdict;
    }
    affected.forEach(function (b) {
      var axis = keyPackage(bugs.get(b.id));
      var fixes = candidates.filter(function (c) { return c.versions[axis] && on(c, b.id) === NOT_AFFECTED; });
      if (fixes.length) {
        var first = firstMin(fixes, function (x, y) {
          return cmpList([normalize(x.versions[axis]).key, x.distance], [normalize(y.versions[axis]).key, y.distance]) < 0;
        });
        b.fixed_in = D.labels[axis] + " " + first.versions[axis];
      }
    });
    var fixable = affected.filter(function (b) { return b.fixed_in; }).map(function (b) { return b.id; });
    var left = affected.filter(function (b) { return !b.fixed_in; }).map(function (b) { return b.id; });
    if (!fixable.length) {
      return { found: false, versions: null, changes: [], install: "", avoids: [], still_affected: left, brings: [],
               why: "no release in the compatibility table is known to avoid them: use the workarounds" };
    }
    var ranked = [];
    candidates.forEach(function (c) {
      if (fixable.every(function (b) { return on(c, b) === NOT_AFFECTED; })) {
        var brings = others.filter(function (b) { return on(c, b) === AFFECTED; });
        ranked.push({ key: [brings.length, c.changes.length, c.distance], c: c, brings: brings });
      }
    });
    if (!ranked.length) {
      return { found: false, versions: null, changes: [], install: "", avoids: [], still_affected: left.concat(fixable),
               brings: [], why: "no single combination avoids every one of them together" };
    }
    var top = firstMin(ranked, function (x, y) { return cmpList(x.key, y.key) < 0; });
    var merged = Object.assign({}, env.versions, top.c.versions);
    var basis = {};
    fixable.forEach(function (b) { basis[b] = verdict(b, bugs.get(b), merged, env, table).basis; });
    return { found: true, versions: top.c.versions, changes: top.c.changes, install: top.c.install, avoids: fixable,
             basis: basis, still_affected: left, brings: top.brings, why: "" };
  }

  /* ---------------------------------------------------------- check.candidates */
  function candidates(env) {
    var versions = env.versions;
    if (env.kind === "ngc" && versions.ngc) { return ngcCandidates(String(versions.ngc)); }
    var torch = normalize(versions.torch);
    if (!torch) { return []; }
    var torches = U.torch.map(function (t, i) { return [t[0], i]; })
      .filter(function (t) { return cmp(parse(t[0]), torch) >= 0; });
    var out = [];
    var trtNow = normalize(versions.torch_tensorrt);
    if (trtNow) {
      U.torch_tensorrt.forEach(function (row) {
        if (cmp(parse(row[0]), trtNow) < 0 || row[1]) { return; }
        torches.forEach(function (t) { if (row[2].indexOf(t[1]) >= 0) { out.push(pip(versions, t, row[0])); } });
      });
    } else {
      torches.forEach(function (t) { out.push(pip(versions, t, null)); });
    }
    return out.filter(function (c) { return c.changes.length; });
  }

  function pip(versions, t, trt) {
    var neu = { torch: t[0], torch_tensorrt: trt };
    var packages = ["torch", "torchvision", "torch_tensorrt"];
    if (versions.torchvision) {
      var paired = U.torch[t[1]][1], now = plain(versions.torchvision);
      neu.torchvision = paired.indexOf(now) >= 0 ? now : (paired.length ? paired[0] : null);
    }
    var lists = { torch: U.torch.map(function (r) { return r[0]; }),
                  torch_tensorrt: U.torch_tensorrt.map(function (r) { return r[0]; }), torchvision: U.torchvision };
    var changes = packages.filter(function (p) {
      if (!(p in neu) || neu[p] === null) { return false; }
      var a = normalize(neu[p]), b = normalize(versions[p]);
      return !(a && b && cmp(a, b) === 0) && !(a === null && b === null);
    });
    var pins = packages.filter(function (p) { return neu[p]; }).map(function (p) { return U.pip_names[p] + "==" + neu[p]; });
    var distance = 0;
    changes.forEach(function (p) { distance += steps(lists[p], versions[p], neu[p]); });
    return { kind: "pip", versions: { torch: neu.torch === undefined ? null : neu.torch,
                                      torchvision: neu.torchvision === undefined ? null : neu.torchvision,
                                      torch_tensorrt: neu.torch_tensorrt === undefined ? null : neu.torch_tensorrt },
             changes: changes, distance: distance, install: "pip install " + pins.join(" ") };
  }

  function steps(known, old, neu) {
    var start = normalize(old), end = parse(neu);
    var n = known.filter(function (v) { var x = parse(v); return (!start || cmp(x, start) > 0) && cmp(x, end) <= 0; }).length;
    return Math.max(1, n);
  }

  function ngcCandidates(tag) {
    var tags = U.ngc.map(function (r) { return r[0]; });
    var at = tags.indexOf(tag);
    if (at < 0) { return []; }
    return U.ngc.slice(at + 1).map(function (r, i) {
      return { kind: "ngc", versions: { torch: plain(r[1]), torchvision: null, torch_tensorrt: plain(r[2]), ngc: r[0] },
               changes: ["ngc"], distance: i + 1, install: "docker pull " + U.ngc_image.replace("{tag}", r[0]) };
    });
  }

  /* ---------------------------------------------------------- check.environment */
  function environment(fields) {
    var ngc = fields.ngc;
    var pins = [["torch", fields.torch], ["torchvision", fields.torchvision], ["torch-tensorrt", fields["torch-tensorrt"]]]
      .filter(function (p) { return p[1]; });
    if (ngc && pins.length) { throw new Error("give one environment: versions or an NGC release, not both"); }
    if (ngc) {
      var rel = U.ngc.filter(function (r) { return r[0] === ngc; })[0];
      if (!rel) {
        throw new Error("NGC " + ngc + " is not a known NGC PyTorch release; known: " +
                        U.ngc.map(function (r) { return r[0]; }).join(", "));
      }
      var packages = {};
      [["torch", rel[1]], ["torch-tensorrt", rel[2]], ["tensorrt", rel[3]]].forEach(function (p) { if (p[1]) { packages[p[0]] = p[1]; } });
      return { label: "NGC PyTorch " + rel[0], kind: "ngc", complete: false, packages: packages,
               versions: { torch: rel[1] || null, torchvision: null, torch_tensorrt: rel[2] || null, ngc: rel[0],
                           python: rel[4] || null, tensorrt: rel[3] || null } };
    }
    if (!fields.torch) { throw new Error("give torch's version: every bug of the catalog depends on it"); }
    var out = {};
    pins.forEach(function (p) {
      if (!parse(p[1])) { throw new Error(p[0] + "==" + p[1] + ": " + p[1] + " is not a version (like 2.4.1)"); }
      out[p[0]] = p[1];
    });
    return { label: pins.map(function (p) { return p[0] + "==" + p[1]; }).join(" "), kind: "pip", complete: true,
             packages: out, versions: { torch: out.torch, torchvision: out.torchvision || null,
                                        torch_tensorrt: out["torch-tensorrt"] || null, ngc: null, python: null, tensorrt: null } };
  }

  function rows() {
    return D.rows.map(function (r) {
      var st = D.stacks[r[0]], versions = {};
      D.axes.forEach(function (a, i) { versions[a] = st[3 + i]; });
      var row = { stack: st[0], kind: st[1], gpu: st[2], versions: versions };
      D.row_keys.forEach(function (k, i) { row[k] = r[1 + i]; });
      return row;
    });
  }

  /* --------------------------------------------------------------- the box */
  function check(fields) {
    var env = environment(fields);
    return answer(D.bugs, rows(), env, candidates(env));
  }

  function show(result) {
    answerNode.textContent = "";
    var list = el("ul", "check-bugs");
    result.bugs.forEach(function (b) {
      var li = el("li", "check-bug");
      li.setAttribute("data-bug", b.id);
      li.setAttribute("data-verdict", b.verdict);
      var head = el("p", "check-head");
      head.appendChild(el("strong", "check-mark", MARKS[b.verdict]));
      head.appendChild(document.createTextNode(" "));
      head.appendChild(el("code", null, b.id));
      head.appendChild(document.createTextNode(": " + b.title));
      li.appendChild(head);
      li.appendChild(el("p", "check-why", b.verdict + ": " + b.why));
      if (b.rule && b.rule.note) { li.appendChild(el("p", "check-note", "rule's note: " + b.rule.note)); }
      if (b.verdict === AFFECTED) {
        if (b.record && b.record.workaround) { li.appendChild(el("p", "check-stage", "workaround stage on that record: " + b.record.workaround)); }
        li.appendChild(el("p", "check-workaround", "workaround: " + (b.workaround || "none documented")));
        li.appendChild(el("p", "check-fixed", "fixed in: " + (b.fixed_in || "no release known to fix it")));
      }
      list.appendChild(li);
    });
    answerNode.appendChild(list);
    var up = result.upgrade, div = el("div", "check-upgrade");
    div.id = "check-upgrade";
    if (up === null) {
      div.appendChild(el("p", "check-up-none", "smallest upgrade: none needed"));
    } else if (!up.found) {
      div.appendChild(el("p", "check-up-none", "smallest upgrade: none: " + up.why + " (" + up.still_affected.join(", ") + ")"));
    } else {
      var now = result.environment.versions;
      div.appendChild(el("p", "check-up-moves", "smallest upgrade: " + up.changes.map(function (p) {
        return D.labels[p] + " " + (now[p] || "-") + " -> " + up.versions[p];
      }).join(", ")));
      div.appendChild(el("p", "check-up-avoids", "avoids: " + up.avoids.map(function (b) { return b + " (" + up.basis[b] + ")"; }).join(", ")));
      if (up.still_affected.length) {
        div.appendChild(el("p", "check-up-still", "still affected (no release known to fix them: use their workarounds): " + up.still_affected.join(", ")));
      }
      if (up.brings.length) { div.appendChild(el("p", "check-up-brings", "brings: " + up.brings.join(", ") + " (not affected now)")); }
      div.appendChild(el("code", "check-install", up.install));
    }
    answerNode.appendChild(div);
    answerNode.appendChild(el("p", "check-summary", result.affected.length + " of " + result.bugs.length +
                              " known bug(s) affect this environment (" + result.records + " records)"));
  }

  function fieldsOf() {
    var out = {};
    ["torch", "torchvision", "torch-tensorrt", "ngc"].forEach(function (name) { out[name] = form.elements[name].value.trim(); });
    return out;
  }

  function run() {
    try {
      var result = check(fieldsOf());
      box.repromatrixAnswer = result;  // (the answer as check --format json gives it)
      show(result);
      box.setAttribute("data-state", "answered");
    } catch (err) {
      answerNode.textContent = "";
      answerNode.appendChild(el("p", "contra check-error", err.message));
      box.setAttribute("data-state", "error");
    }
  }

  var waiting = false;
  function ready() { if (D && U && waiting) { waiting = false; run(); } }
  window.repromatrixVerdicts = function (payload) { D = payload; ready(); };
  window.repromatrixUpgrades = function (payload) { U = payload; ready(); };

  function load(name) {
    var script = document.createElement("script");
    script.src = box.getAttribute("data-src") + "/" + name;
    script.onerror = function () {
      if (!waiting) { return; }
      waiting = false;
      answerNode.textContent = "";
      answerNode.appendChild(el("p", "contra check-error", "The records could not be loaded (" + script.src + " missing?)."));
      box.setAttribute("data-state", "error");
    };
    document.head.appendChild(script);
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (D && U) { run(); return; }
    if (waiting) { return; }
    waiting = true;
    answerNode.textContent = "loading the records…";
    if (!D) { load("verdicts.js"); }
    if (!U) { load("upgrades.js"); }
  });
}());
