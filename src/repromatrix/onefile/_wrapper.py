"""Container side: the body of every generated script repro (``plain.py`` writes one per
``--script``). Standard library only, Python 3.8+. The host never imports this file: it
copies it below the script's own settings, which take the place of the block marked
``<settings>`` (placeholders, so this file lints and runs on its own).

The wrapper writes the user's script (``SCRIPT_SOURCE``) to a fresh temporary folder
(removed afterwards), runs it there with the same interpreter in the wrapper's process
group (the outcome comes from its exit status, not from its output closing; what it
leaves running in the group is ended then), relays its output, and turns how it ended
into a result like a protocol repro's: exit 0 pass, 125 skip (cannot tell), any other
exit fail, or, with ``BAD_IF_OUTPUT``, fail when the output matches and error when it
exits non-zero without matching. A death by signal is left to the runner (the wrapper
exits 128 + the signal, so the runner records a ``crash`` in stage ``script``).

On the stand-in lane (the engine made TensorRT stand-ins for this environment:
``REPROMATRIX_STANDINS``, the harness's ``_standin.py``) the script runs with them in
place: its process gets the stand-ins' paths (``_standin.child_env``) and starts in
``_launch`` (this file, run again), where its first import of ``torch_tensorrt`` or
``tensorrt`` first stands in what torch-tensorrt needs of a GPU (``_standin.activate``).
The stage lists what was stood in (``standins``), so the record's evidence level says so;
a run in which ``torch_tensorrt`` did not import is ``error`` whatever the exit: the
stand-ins could not load torch-tensorrt, so the script could not tell.
"""
import importlib.util
import json
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# <settings>
META = {"id": "script", "title": "script.py (plain script)"}
SCRIPT_NAME = "script.py"
SCRIPT_ORIGIN = ""
BAD_IF_OUTPUT = None
SCRIPT_SOURCE = "import sys\nsys.exit(0)\n"
# </settings>

CANNOT_TELL = 125
OUTPUT_LIMIT = 4 * 1024 * 1024
TAIL = 4000
RELAY_GRACE_S = 2.0
LAUNCH = "--launch-on-standins"  # this file run as the script's own process on the lane
NOT_LOADED = "torch_tensorrt_not_loaded"  # stage evidence: why torch-tensorrt did not import
STANDIN_IMPORTS = ("torch_tensorrt", "tensorrt")  # the first import of one activates the stand-ins


def _result_path(argv):
    for i, a in enumerate(argv):
        if a == "--result" and i + 1 < len(argv):
            return argv[i + 1]
    return os.environ.get("REPROMATRIX_RESULT") or None


def _write(path, data):
    if not path:
        return
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _plain_env():
    """The environment of a plain `python script.py`: no harness folder, no result file."""
    env = dict(os.environ)
    env.pop("REPROMATRIX_RESULT", None)
    keep = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and not (os.path.isfile(os.path.join(p, "protocol.py"))
                          and os.path.isfile(os.path.join(p, "runner.py")))]
    if keep:
        env["PYTHONPATH"] = os.pathsep.join(keep)
    else:
        env.pop("PYTHONPATH", None)
    return env


def _lane():
    """The harness's ``_standin`` module where this environment has TensorRT stand-ins made
    (the stand-in lane), else None (a plain run, as everywhere else)."""
    try:
        import _standin
    except ImportError:  # run on its own, without the harness
        return None
    if _standin.manifest() is None:  # the engine made none (REPROMATRIX_STANDINS)
        return None
    return _standin if _standin.missing_reason(["tensorrt"]) is None else None


def _command(path, folder, lane):
    """(argv, environment) of the script's process: plain, or through ``_launch`` with the
    stand-ins' paths on the lane (the harness folder is passed, never on its path)."""
    if lane is None:
        return [sys.executable, path], _plain_env()
    harness = os.path.dirname(os.path.abspath(lane.__file__))
    return ([sys.executable, os.path.abspath(__file__), LAUNCH, harness, _report(folder), path],
            lane.child_env(_plain_env()))


def _report(folder):
    """Where ``_launch`` leaves what it stood in (the script's scratch folder)."""
    return os.path.join(folder, ".repromatrix-standins.json")


def _run(path, folder, lane=None):
    """Run the script in this wrapper's process group (so the runner's group kill at a time
    limit reaches it and all it started); its exit status decides, not its output closing
    (a background child it leaves may hold the pipe). What it leaves is ended after."""
    argv, env = _command(path, folder, lane)
    proc = subprocess.Popen(argv, cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    kept = bytearray()
    relay = threading.Thread(target=_relay, args=(proc.stdout, kept), daemon=True)
    relay.start()
    try:
        rc = proc.wait()
    finally:
        _end_leftovers()
    relay.join(RELAY_GRACE_S)  # a child that left the group may keep the pipe: not waited on
    return rc, bytes(kept).decode("utf-8", "replace")


def _relay(stream, kept):
    read = stream.read1 if hasattr(stream, "read1") else stream.readline
    for chunk in iter(lambda: read(65536), b""):
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        kept += chunk
        if len(kept) > OUTPUT_LIMIT:
            del kept[:len(kept) - OUTPUT_LIMIT]


def _group_members():
    """The other live processes of this process group (Linux: read from /proc); none when
    this wrapper does not lead its group (the runner starts it so: then the group is ours)."""
    me, group = os.getpid(), os.getpgid(0)
    if me != group:
        return []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    out = []
    for pid in pids:
        try:
            if pid != me and os.getpgid(pid) == group and not _zombie(pid):
                out.append(pid)
        except OSError:
            continue
    return out


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _end_leftovers():
    """SIGTERM what the script left running in this group, SIGKILL it after a grace."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 1.0)):
        members = _group_members()
        for pid in members:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + grace
        while members and time.time() < deadline:
            time.sleep(0.05)
            members = _group_members()
        if not members:
            return


def _verdict(rc, output):
    """(status, signature, message) of a script that exited with ``rc``."""
    if rc == CANNOT_TELL:
        return "skip", None, "exit 125: the script cannot tell (like git bisect run)"
    if BAD_IF_OUTPUT is not None:
        m = re.search(BAD_IF_OUTPUT, output, re.M)
        if m:
            line = output[output.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
            return "fail", "output_matched", "output matched /%s/ (exit %d): %s" % (
                BAD_IF_OUTPUT, rc, line[:300])
        if rc != 0:
            return "error", None, "exit %d without output matching /%s/: it failed differently" % (
                rc, BAD_IF_OUTPUT)
        return "pass", None, "exit 0, no output matched /%s/" % BAD_IF_OUTPUT
    if rc != 0:
        last = [ln for ln in output.strip().splitlines() if ln.strip()][-1:]
        return "fail", "nonzero_exit", "exit %d: %s" % (rc, last[0].strip()[:300] if last else "no output")
    return "pass", None, "exit 0: the script's own check passed"


class _StandinImports:
    """A meta path finder in the script's process on the lane: the first import of
    ``torch_tensorrt`` or ``tensorrt`` stands in what torch-tensorrt needs of a GPU first
    (``_standin.activate``: what it stood in is kept); a ``torch_tensorrt`` that does not
    import keeps why (``not_loaded``). It finds nothing itself."""

    def __init__(self, standin):
        self.standin = standin
        self.kept = {"standins": None, "not_loaded": None}  # standins: None until activated
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name not in STANDIN_IMPORTS or self.busy:
            return None
        self.busy = True
        try:
            if self.kept["standins"] is None:
                self.kept["standins"] = self.standin.activate()
            spec = importlib.util.find_spec(name)
        except Exception as e:
            self._failed(name, "the stand-ins could not be put in place: %s: %s" % (type(e).__name__, e))
            raise
        finally:
            self.busy = False
        if spec is None:
            self._failed(name, "No module named %r" % name)
        elif name == "torch_tensorrt" and spec.loader is not None:
            self._watch(spec.loader)
        return spec

    def _failed(self, name, why):
        if name == "torch_tensorrt":
            self.kept["not_loaded"] = why

    def _watch(self, loader):
        run, failed = loader.exec_module, self._failed

        def exec_module(module):
            try:
                run(module)
            except BaseException as e:
                failed("torch_tensorrt", "%s: %s" % (type(e).__name__, e))
                raise

        loader.exec_module = exec_module


def _launch(harness, report, path):
    """The script's own process on the lane: ``python <script>`` with the stand-in imports
    watched; what was stood in, and whether torch-tensorrt imported, go to ``report``."""
    sys.path[0] = os.path.dirname(path)  # as `python script.py` has it, not this file's folder
    sys.path.insert(0, harness)  # only while _standin is imported
    import _standin
    sys.path.remove(harness)
    imports = _StandinImports(_standin)
    sys.meta_path.insert(0, imports)
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except Exception as e:  # printed as python would, from the script's own frame
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb or e.__traceback__)
        return 1
    finally:
        sys.stdout.flush()
        _write(report, imports.kept)


def _on_standins(verdict, report):
    """(status, signature, message, standins, evidence) of a lane run: ``verdict`` as
    it is, but ``error`` where torch-tensorrt did not import (the script could not tell)."""
    status, signature, message = verdict
    try:
        with open(report) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        kept = {}
    standins, why = list(kept.get("standins") or []), kept.get("not_loaded")
    if not why:
        return status, signature, message, standins, {}
    return ("error", None, "torch-tensorrt did not load on the TensorRT stand-ins, so the script "
            "could not tell (%s; %s)" % (why[:300], message), standins, {NOT_LOADED: why[:1000]})


def _stopped(signum, frame):
    """The runner's time limit (SIGTERM to this group): unwind, so the folder is removed."""
    sys.exit(128 + signum)


def main():
    signal.signal(signal.SIGTERM, _stopped)
    result = _result_path(sys.argv[1:])
    started = time.time()
    record = {"protocol_version": 1, "repro": META["id"], "complete": False, "running": "script",
              "running_role": "main", "status": "error", "message": "", "signature": None,
              "workaround": None, "stages": [], "traceback": "", "signatures": []}
    _write(result, record)
    folder = tempfile.mkdtemp(prefix="repromatrix-script-")
    lane = _lane()
    try:
        path = os.path.join(folder, SCRIPT_NAME)
        with open(path, "w") as f:
            f.write(SCRIPT_SOURCE)
        rc, output = _run(path, folder, lane)
        verdict = _verdict(rc, output)
        status, signature, message, standins, evidence = \
            _on_standins(verdict, _report(folder)) if lane else verdict + ([], {})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if rc < 0:  # a death by signal: the runner records the crash in stage "script"
        sys.exit(128 - rc)
    took = round(time.time() - started, 3)
    evidence.update({"exit_code": rc, "bad_if_output": BAD_IF_OUTPUT, "script": SCRIPT_NAME})
    stage = {"name": "script", "role": "main", "status": status, "duration_s": took,
             "message": message, "checks": [], "evidence": evidence, "standins": standins}
    if signature:
        stage["signature"] = signature
    record.update({"complete": True, "running": None, "status": status, "signature": signature,
                   "message": "script: %s" % message, "stages": [stage], "duration_s": took,
                   "traceback": "" if status == "pass" else output[-TAIL:]})
    _write(result, record)
    sys.stdout.write("[repro] %s: %s (%s)\n" % (META["id"], status, message))
    return 0


if __name__ == "__main__":
    sys.exit(_launch(*sys.argv[2:5]) if sys.argv[1:2] == [LAUNCH] else main())
