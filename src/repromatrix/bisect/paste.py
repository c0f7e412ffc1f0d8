"""Bisect output: progress lines, the paste-ready result block, and its JSON form.

Pure formatting over the probes a bisect made (each a result record from the
store). What changed is read from the records' environment probes (the
versions really installed), falling back to the stack pins. Upstream links:
pytorch and Torch-TensorRT release/compare pages on GitHub, NVIDIA's release
notes for NGC containers, and a commit compare when both NGC builds name a
torch commit.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from repromatrix.config.compat import load_table
from repromatrix.engines.images import index_options, requirements
from repromatrix.model import Settings, Stack, Status
from repromatrix.store.record import Result

from .candidates import Candidate, probe_settings
from .search import BoundsFailed, Found, Step, Verdict

PACKAGES = ("python", "torch", "torch_git", "torchvision", "torch_tensorrt", "tensorrt",
            "torch_cuda", "cudnn", "onnx", "onnxscript", "onnxruntime", "ngc")
REPOS = {"torch": "https://github.com/pytorch/pytorch", "torch_tensorrt": "https://github.com/pytorch/TensorRT",
         "onnxscript": "https://github.com/microsoft/onnxscript"}
NGC_NOTES = "https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel-{yy}-{mm}.html"
NGC_IMAGE = "nvcr.io/nvidia/pytorch:{tag}-py3"
_GIT_SUFFIX = re.compile(r"\+([0-9a-f]{7,40})$")


@dataclass
class Probe:
    """One probed candidate: the record that decided it and what it meant."""

    index: int
    candidate: Candidate
    record: Result
    status: str
    note: str
    verdict: Verdict
    reused: bool


@dataclass
class Setup:
    """What the bisect was asked (for labels, commands and JSON)."""

    repro: str
    axis: str
    find_fix: bool
    bad_if: tuple[str, ...]
    stage: str | None
    settings: Settings
    command: list[str] = field(default_factory=list)
    script: tuple[str, str] | None = None  # (file name, text) an upstream maintainer runs
    rule: str = ""  # how that script's exit code reads

    def label(self, verdict: Verdict) -> str:
        """good/bad for a verdict: OLD is good for a regression, bad for --find-fix."""
        old, new = ("bad", "good") if self.find_fix else ("good", "bad")
        return {Verdict.OLD: old, Verdict.NEW: new, Verdict.SKIP: "cannot tell"}[verdict]

    def with_bounds(self, good: str, bad: str) -> str:
        argv = list(self.command)
        for flag, value in (("--good", good), ("--bad", bad)):
            argv[argv.index(flag) + 1] = value
        return shlex.join(argv)


def progress_line(setup: Setup, step: Step, probe: Probe, bounds: bool) -> str:
    where = "bound " if bounds else ""
    left = "" if bounds else (f"; {step.left} candidate(s) left, at most {step.budget} more probe(s)")
    reused = " [recorded]" if probe.reused else ""
    note = f" ({probe.note})" if probe.verdict is Verdict.SKIP and probe.note else ""
    return (f"{where}{setup.axis} {probe.candidate.version}: {probe.status} -> "
            f"{setup.label(probe.verdict)}{note}{left}{reused}")


def versions(probe: Probe) -> dict[str, str | None]:
    """Package versions of a probed stack: what the probe found, else the pins."""
    env = probe.record.env
    stack = probe.candidate.stack.spec() if probe.candidate.stack else {}
    pins = {"torch_cuda": stack.get("cuda"), **stack}
    return {k: _str(env.get(k) or pins.get(k)) for k in PACKAGES}


def _str(v: Any) -> str | None:
    return None if v in (None, "") else str(v)


def changes(old: Probe, new: Probe) -> list[tuple[str, str | None, str | None]]:
    a, b = versions(old), versions(new)
    return [(k, a[k], b[k]) for k in PACKAGES if a[k] or b[k]]


def links(axis: str, old: Probe, new: Probe) -> list[str]:
    """Release-notes and compare pages between the two stacks."""
    out: list[str] = []
    a, b = versions(old), versions(new)
    if axis == "ngc":
        for tag in (new.candidate.version,):
            yy, _, mm = tag.partition(".")
            out.append(NGC_NOTES.format(yy=yy, mm=mm))
    for pkg in ("torch", "torch_tensorrt", *(("onnxscript",) if axis == "onnxscript" else ())):
        va, vb = _release(a[pkg]), _release(b[pkg])
        if not va or not vb or va == vb and pkg != axis:
            ga, gb = _git(a[pkg]), _git(b[pkg])
            if ga and gb and ga != gb:
                out.append(f"{REPOS[pkg]}/compare/{ga}...{gb}")
            continue
        out.append(f"{REPOS[pkg]}/releases/tag/v{vb}")
        if va != vb:
            out.append(f"{REPOS[pkg]}/compare/v{va}...v{vb}")
        ga, gb = _git(a[pkg]), _git(b[pkg])
        if ga and gb and ga != gb:
            out.append(f"{REPOS[pkg]}/compare/{ga}...{gb}")
    return out


def _release(v: str | None) -> str | None:
    """'2.14.0+cu130' -> '2.14.0'; pre-releases ('2.14.0a0+abc') have no release page."""
    if not v:
        return None
    head = v.split("+", 1)[0]
    return head if re.fullmatch(r"\d+(\.\d+)*", head) else None


def _git(v: str | None) -> str | None:
    m = _GIT_SUFFIX.search(v or "")
    return m.group(1) if m else None


def reproduce(setup: Setup, stack: Stack, record: Result | None = None) -> list[str]:
    """Shell lines that reproduce a cell outside the harness: a fresh environment with
    exactly the probed versions of what the probe installed, then the script."""
    name = setup.script[0] if setup.script else f"{setup.repro}.py"
    script = shlex.quote(name)
    settings = probe_settings(setup.settings, stack)
    if stack.kind == "ngc":
        image = NGC_IMAGE.format(tag=stack.ngc)
        extra = " ".join(shlex.quote(r) for r in pinned(requirements(stack, settings), record))
        install = f"pip install {extra} && " if extra else ""
        return [f'docker run --rm --gpus all -v "$PWD:/work" -w /work {image} '
                f"sh -c {shlex.quote(install + 'python ' + script)}"]
    if stack.kind == "pip":
        py = stack.python or settings.python
        opts = " ".join(index_options(stack, settings))
        reqs = " ".join(shlex.quote(r) for r in pinned(requirements(stack, settings), record))
        return [f"python{py} -m venv env", f"env/bin/pip install {opts + ' ' if opts else ''}{reqs}",
                f"env/bin/python {script}"]
    return [f"{stack.interpreter} {script}"]


def pinned(reqs: Sequence[str], record: Result | None) -> list[str]:
    """Each requirement pinned to the version the probe found installed (when it did)."""
    found = _distributions(record)
    out = []
    for req in reqs:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        name = re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else ""
        out.append(f"{m.group(1)}=={found[name]}" if m and name in found else req)
    return out


def _distributions(record: Result | None) -> dict[str, str]:
    raw = record.env.get("distributions") if record is not None else None
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def distribution_changes(old: Probe, new: Probe) -> list[tuple[str, str | None, str | None]]:
    """Every installed distribution that differs between the two environments."""
    a, b = _distributions(old.record), _distributions(new.record)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def script_block(setup: Setup) -> list[str]:
    """The script inline (collapsed on GitHub), with how its exit code reads."""
    if not setup.script:
        return []
    name, text = setup.script
    return [f"`{name}` ({setup.rule}):", "", f"<details><summary>{name} "
            f"({len(text.splitlines())} lines)</summary>", "", "```python", text.rstrip("\n"), "```",
            "", "</details>"]


def _stack_line(setup: Setup, p: Probe) -> str:
    v = versions(p)
    keys = ("python", "torch", "torchvision", "torch_tensorrt", "tensorrt", "torch_cuda")
    if setup.axis not in keys and setup.axis != "ngc":  # onnxscript, onnxruntime: the axis too
        keys += (setup.axis,)
    shown = ", ".join(f"{k} {v[k]}" for k in keys if v.get(k))
    return f"{setup.axis} {p.candidate.version}  [{p.candidate.stack.id if p.candidate.stack else '-'}]" \
           f"  ({shown})"


def text_report(setup: Setup, result: Found, probes: dict[int, Probe],
                candidates: Sequence[Candidate]) -> str:
    """The block to paste into an upstream issue (markdown)."""
    old, new = probes[result.last_old], probes[result.first_new]
    what = f"stage `{setup.stage}` of `{setup.repro}`" if setup.stage else f"`{setup.repro}`"
    kind = "fix" if setup.find_fix else "regression"
    lines = [f"### Bisect: {what} on the {setup.axis} axis ({kind}; bad = {','.join(setup.bad_if)})", ""]
    lines += [f"- last {setup.label(Verdict.OLD)}: {_stack_line(setup, old)}",
              f"- first {setup.label(Verdict.NEW)}: {_stack_line(setup, new)}"]
    if not result.exact:
        span = ", ".join(c.version for c in result.span)
        lines += ["", f"**Ambiguous:** the first {setup.label(Verdict.NEW)} release is one of {span}; "
                      "these could not be tested:"]
        for i in result.untested:
            lines.append(f"  - {candidates[i].version}: " + _why_untested(probes.get(i), candidates[i]))
    lines += ["", f"What changed ({setup.label(Verdict.OLD)} -> {setup.label(Verdict.NEW)}):", "",
              "| package | " + setup.label(Verdict.OLD) + " | " + setup.label(Verdict.NEW) + " |",
              "|---|---|---|"]
    for pkg, a, b in changes(old, new):
        mark = " **changed**" if a != b else ""
        lines.append(f"| {pkg} | {a or '-'} | {b or '-'}{mark} |")
    others = [(k, a, b) for k, a, b in distribution_changes(old, new) if k.replace("-", "_") not in PACKAGES]
    if others:
        lines += ["", f"Every other installed distribution that differs ({len(others)}):", "",
                  "| distribution | " + setup.label(Verdict.OLD) + " | " + setup.label(Verdict.NEW) + " |",
                  "|---|---|---|"]
        lines += [f"| {k} | {a or '-'} | {b or '-'} |" for k, a, b in others]
    lines += ["", "Outcome:", f"- {old.candidate.version}: {old.status} ({old.note})",
              f"- {new.candidate.version}: {new.status} ({new.note})"]
    urls = links(setup.axis, old, new)
    if urls:
        lines += ["", "Upstream:"] + [f"- {u}" for u in urls]
    first_bad = new if not setup.find_fix else old
    if first_bad.candidate.stack:
        lines += ["", f"Reproduce the {setup.label(first_bad.verdict)} cell "
                      f"({first_bad.candidate.version}) with:", "```sh"]
        lines += reproduce(setup, first_bad.candidate.stack, first_bad.record) + ["```"]
        lines += [""] + script_block(setup) if setup.script else []
    lines += ["", "Check both again with repromatrix (recorded probes are reused):", "```sh",
              setup.with_bounds(*_good_bad(setup, old, new)), "```"]
    reused = sum(1 for p in probes.values() if p.reused)
    lines += ["", f"Probes ({len(probes)}, {reused} reused from the results store): " +
              ", ".join(f"{p.candidate.version} {p.status} ({setup.label(p.verdict)})"
                        for p in probes.values())]
    return "\n".join(lines)


def _good_bad(setup: Setup, old: Probe, new: Probe) -> tuple[str, str]:
    a, b = old.candidate.version, new.candidate.version
    return (b, a) if setup.find_fix else (a, b)


def _why_untested(p: Probe | None, c: Candidate) -> str:
    if p is None:
        return f"no installable stack ({c.reason})" if c.reason else "not probed"
    known = known_broken(c)
    return (f"{p.status} ({p.note})" if p.note else p.status) + (f"; known: {known}" if known else "")


def known_broken(c: Candidate) -> str:
    """What the compat table knows about a candidate torch-tensorrt release that does not work."""
    trt = c.stack.torch_tensorrt if c.stack else None
    row = load_table().torch_tensorrt.get(trt) if trt else None
    return row.broken or "" if row else ""


def wrong_bounds_message(setup: Setup, result: BoundsFailed, probes: dict[int, Probe]) -> str:
    """Which bound is wrong, what it gave, and what to do about it."""
    lines, hints = [], []
    for w in result.wrong:
        p = probes[w.index]
        flag = "--good" if setup.label(w.expected) == "good" else "--bad"
        note = f" ({p.note})" if p.note else ""
        if p.status == Status.BROKEN.value:
            lines.append(f"cannot tell: infrastructure — {flag} {p.candidate.version}'s environment "
                         f"could not be built or started{note}")
            hints.append("fix the cause above and run the same command again (the bounds are not "
                         "in question)")
        elif w.got is Verdict.SKIP:
            lines.append(f"{flag} {p.candidate.version} cannot be verified: it gave {p.status}{note}, "
                         f"which is neither good nor bad")
            hints.append("a bound must be testable: pick a release where the check runs")
        else:
            lines.append(f"{flag} {p.candidate.version} is not {setup.label(w.expected)}: "
                         f"it gave {p.status}{note}")
            hints.append("pick other bounds" + ("" if setup.find_fix else " (or --find-fix if the "
                                                "newer release is the good one)"))
    if not infra_only(result, probes):
        hints.append("--bad-if chooses which statuses count as bad")
    return "; ".join(lines) + ". Next: " + "; ".join(dict.fromkeys(hints)) + "."


def infra_only(result: BoundsFailed, probes: dict[int, Probe]) -> bool:
    """Every wrong bound is `broken`: the environment, not the claim, is at fault."""
    return all(probes[w.index].status == Status.BROKEN.value for w in result.wrong)


def probe_json(setup: Setup, p: Probe) -> dict[str, Any]:
    return {"version": p.candidate.version, "stack": p.candidate.stack.spec() if p.candidate.stack else None,
            "cell": p.record.cell, "run_id": p.record.run_id, "status": p.status,
            "note": p.note, "verdict": setup.label(p.verdict), "reused": p.reused,
            "versions": versions(p)}


def json_report(setup: Setup, result: Found | BoundsFailed, probes: dict[int, Probe],
                candidates: Sequence[Candidate]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "repro": setup.repro, "axis": setup.axis, "direction": "fix" if setup.find_fix else "regression",
        "bad_if": list(setup.bad_if), "stage": setup.stage,
        "probes": [probe_json(setup, p) for p in probes.values()],
        "not_installable": [{"version": c.version, "reason": c.reason} for c in candidates if not c.stack],
    }
    if isinstance(result, BoundsFailed):
        out["result"] = "wrong-bound"
        out["message"] = wrong_bounds_message(setup, result, probes)
        return out
    old, new = probes[result.last_old], probes[result.first_new]
    out.update({
        "result": "found" if result.exact else "ambiguous",
        "last_" + setup.label(Verdict.OLD): probe_json(setup, old),
        "first_" + setup.label(Verdict.NEW): probe_json(setup, new),
        "candidates": [c.version for c in result.span],
        "untested": [{"version": candidates[i].version,
                      "why": _why_untested(probes.get(i), candidates[i])} for i in result.untested],
        "changes": {k: [a, b] for k, a, b in changes(old, new)},
        "links": links(setup.axis, old, new),
        "command": setup.with_bounds(*_good_bad(setup, old, new)),
    })
    out["distribution_changes"] = {k: [a, b] for k, a, b in distribution_changes(old, new)}
    first_bad = new if not setup.find_fix else old
    if first_bad.candidate.stack:
        out["reproduce"] = reproduce(setup, first_bad.candidate.stack, first_bad.record)
    if setup.script:
        out["script"] = {"name": setup.script[0], "text": setup.script[1], "rule": setup.rule}
    return out
