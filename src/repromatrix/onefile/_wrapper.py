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
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

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


def _run(path, folder):
    """Run the script in this wrapper's process group (so the runner's group kill at a time
    limit reaches it and all it started); its exit status decides, not its output closing
    (a background child it leaves may hold the pipe). What it leaves is ended after."""
    proc = subprocess.Popen([sys.executable, path], cwd=folder, env=_plain_env(),
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
    try:
        path = os.path.join(folder, SCRIPT_NAME)
        with open(path, "w") as f:
            f.write(SCRIPT_SOURCE)
        rc, output = _run(path, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if rc < 0:  # a death by signal: the runner records the crash in stage "script"
        sys.exit(128 - rc)
    status, signature, message = _verdict(rc, output)
    took = round(time.time() - started, 3)
    stage = {"name": "script", "role": "main", "status": status, "duration_s": took,
             "message": message, "checks": [],
             "evidence": {"exit_code": rc, "bad_if_output": BAD_IF_OUTPUT, "script": SCRIPT_NAME}}
    if signature:
        stage["signature"] = signature
    record.update({"complete": True, "running": None, "status": status, "signature": signature,
                   "message": "script: %s" % message, "stages": [stage], "duration_s": took,
                   "traceback": "" if status == "pass" else output[-TAIL:]})
    _write(result, record)
    sys.stdout.write("[repro] %s: %s (%s)\n" % (META["id"], status, message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
