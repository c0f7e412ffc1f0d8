/* repromatrix "Check your versions" box: looks up the answer of `repromatrix check PINS
 * --from results.json.gz --format json`, which Python worked out for every combination the
 * compatibility table allows and every NGC release (check/page.py, with the command's own
 * function): data/environments.js (each combination and its environment) and
 * data/verdicts.js (each one's answer, its repeated parts interned), loaded as scripts when
 * first needed (file:// works). No rule of `check` is written here: what was typed is
 * trimmed, a leading "v" and a "+local" part dropped, and looked up; a combination not in
 * the data gets the command to run instead. Text only through textContent.
 *
 * window.repromatrix.check({torch, torchvision, torch_tensorrt, ngc}) returns a Promise of
 * the answer (schema: repromatrix/data/check.schema.json), or of
 * {known: false, message, command} for a combination the page does not know (command:
 * the `repromatrix check ...` to run, null when the fields give no environment). */
(function () {
  "use strict";
  var box = document.getElementById("check");
  var form = document.getElementById("check-form");
  var answerNode = document.getElementById("check-answer");
  var folder = box ? box.getAttribute("data-src") : "data";
  var FIELDS = ["torch", "torchvision", "torch_tensorrt", "ngc"];
  var PINS = { torch: "torch", torchvision: "torchvision", torch_tensorrt: "torch-tensorrt" };
  var MARKS = { "affected": "AFFECTED", "not affected": "ok", "cannot tell": "?" };
  var E = null, V = null, at = null, loading = null;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function copy(value) { return JSON.parse(JSON.stringify(value)); }

  /* ------------------------------------------------------------- the data */
  function load(name) {
    return new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = folder + "/" + name;
      script.onload = resolve;
      script.onerror = function () { reject(new Error("The records could not be loaded (" + script.src + " missing?).")); };
      document.head.appendChild(script);
    });
  }
  window.repromatrixEnvironments = function (payload) { E = payload; };
  window.repromatrixVerdicts = function (payload) { V = payload; };

  function data() {
    if (!loading) {
      loading = Promise.all([load("environments.js"), load("verdicts.js")]).then(function () {
        if (!E || !V || E.environments.length !== V.answers.length) {
          throw new Error("The box's data does not fit together: reload the page.");
        }
        at = new Map();
        E.environments.forEach(function (pair, i) { at.set(JSON.stringify(pair[0]), i); });
      });
      loading.catch(function () { loading = null; });  // (a later try loads again)
    }
    return loading;
  }

  /* ------------------------------------------------------------ the look-up */
  function version(text) {  // trimmed, without a leading "v" or a "+local" part
    var t = String(text === undefined || text === null ? "" : text).trim().replace(/^v/i, "");
    var plus = t.indexOf("+");
    return (plus < 0 ? t : t.slice(0, plus)).trim();
  }

  function quoted(text) { return /^[A-Za-z0-9._+=/:@%,-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'"; }

  function results() {
    var url = new URL("results.json.gz", window.location.href);
    return url.protocol === "file:" ? decodeURIComponent(url.pathname) : url.href;
  }

  function command(typed) {
    var args = typed.ngc ? ["--ngc", typed.ngc] :
      FIELDS.slice(0, 3).filter(function (f) { return typed[f]; }).map(function (f) { return PINS[f] + "==" + typed[f]; });
    return ["repromatrix", "check"].concat(args, ["--from", results()]).map(quoted).join(" ");
  }

  function unknown(message, cmd) { return { known: false, message: message, command: cmd }; }

  function answerAt(i) {  // as check/page.py's rebuilt puts it together
    var a = V.answers[i];
    var out = copy(V.shared);
    Object.assign(out, copy(a[2]));
    out.environment = copy(E.environments[i][1]);
    out.bugs = a[0].map(function (j) {  // [its bug's part, record, the other keys]
      var b = V.bugs[j], bug = copy(V.parts[b[0]]);
      Object.assign(bug, copy(b[2]));
      bug.record = copy(V.records[b[1]]);
      return bug;
    });
    out.upgrade = copy(V.upgrades[a[1]]);
    return out;
  }

  function lookup(fields) {
    var typed = {}, key = [];
    FIELDS.forEach(function (f) {
      var raw = fields[f];
      typed[f] = String(raw === undefined || raw === null ? "" : raw).trim();
      key.push(f === "ngc" ? typed[f] : version(raw));
    });
    if (typed.ngc && (typed.torch || typed.torchvision || typed.torch_tensorrt)) {
      return unknown("give one environment: versions or an NGC release, not both", null);
    }
    if (!typed.ngc && !typed.torch) {
      return unknown("give torch's version (or an NGC release): every bug of the catalog depends on torch", null);
    }
    var i = at.get(JSON.stringify(key));
    if (i === undefined) {
      var what = typed.ngc ? "NGC " + typed.ngc : FIELDS.slice(0, 3).filter(function (f) { return typed[f]; })
        .map(function (f) { return PINS[f] + " " + typed[f]; }).join(", ");
      return unknown(what + " is not among the combinations of the compatibility table this page " +
                     "answers for; the command answers any:", command(typed));
    }
    return answerAt(i);
  }

  function check(fields) { return data().then(function () { return lookup(fields || {}); }); }
  window.repromatrix = window.repromatrix || {};
  window.repromatrix.check = check;

  /* ---------------------------------------------------------------- the box */
  if (!box) { return; }

  function show(result) {
    answerNode.textContent = "";
    var list = el("ul", "check-bugs");
    result.bugs.forEach(function (b) {
      var li = el("li", "check-bug");
      li.setAttribute("data-bug", b.id);
      li.setAttribute("data-verdict", b.verdict);
      li.setAttribute("data-kind", b.kind);
      var head = el("p", "check-head");
      var applies = result.notices.indexOf(b.id) >= 0;  /* check's answer says which: told, not counted */
      head.appendChild(el("strong", "check-mark", applies ? "APPLIES" : MARKS[b.verdict]));
      head.appendChild(document.createTextNode(" "));
      head.appendChild(el("code", null, b.id));
      head.appendChild(el("span", "check-kind", " (" + b.kind.replace(/-/g, " ") + ")"));  /* model.KINDS' words */
      head.appendChild(document.createTextNode(": " + b.title));
      li.appendChild(head);
      li.appendChild(el("p", "check-why", b.verdict + ": " + b.why));
      if (b.rule && b.rule.note) { li.appendChild(el("p", "check-note", "rule's note: " + b.rule.note)); }
      if (applies) {
        li.appendChild(el("p", "check-workaround", "what to do: " + (b.workaround || "none documented")));
        li.appendChild(el("p", "check-fixed", "a " + b.kind.replace(/-/g, " ") + ", not a defect: told, not counted in the exit code"));
      } else if (b.verdict === "affected") {
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
        return V.labels[p] + " " + (now[p] || "-") + " -> " + up.versions[p];
      }).join(", ")));
      div.appendChild(el("p", "check-up-avoids", "avoids: " + up.avoids.map(function (b) { return b + " (" + up.basis[b] + ")"; }).join(", ")));
      if (up.still_affected.length) {
        div.appendChild(el("p", "check-up-still", "still affected (no release known to fix them: use their workarounds): " + up.still_affected.join(", ")));
      }
      if (up.brings.length) { div.appendChild(el("p", "check-up-brings", "brings: " + up.brings.join(", ") + " (not affected now)")); }
      if (up.meets.length) { div.appendChild(el("p", "check-up-meets", "meets: " + up.meets.join(", ") + " (breaking changes or user errors: not there now)")); }
      div.appendChild(el("code", "check-install", up.install));
    }
    answerNode.appendChild(div);
    answerNode.appendChild(el("p", "check-summary", result.affected.length + " of " + result.bugs.length +
                              " known bug(s) affect this environment" + (result.notices.length ? "; " + result.notices.length +
                              " breaking change(s) or user error(s) apply (not counted)" : "") + " (" + result.records + " records)"));
  }

  function said(result) {
    answerNode.textContent = "";
    if (result.command === null) {
      answerNode.appendChild(el("p", "contra check-error", result.message));
      box.setAttribute("data-state", "error");
      return;
    }
    answerNode.appendChild(el("p", "check-unknown", result.message));
    answerNode.appendChild(el("code", "check-command", result.command));
    box.setAttribute("data-state", "unknown");
  }

  function fieldsOf() {
    var out = {};
    FIELDS.forEach(function (f) { out[f] = form.elements[f === "torch_tensorrt" ? "torch-tensorrt" : f].value; });
    return out;
  }

  var busy = false;
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (busy) { return; }
    busy = true;
    if (!at) { answerNode.textContent = "loading the records…"; }
    check(fieldsOf()).then(function (result) {
      box.repromatrixAnswer = result;  // (the answer as check --format json gives it)
      if (result.known === false) { said(result); } else {
        show(result);
        box.setAttribute("data-state", "answered");
      }
    }, function (err) {
      answerNode.textContent = "";
      answerNode.appendChild(el("p", "contra check-error", err.message));
      box.setAttribute("data-state", "error");
    }).then(function () { busy = false; });
  });
}());
