"""Fixture: a workflow whose output is checked against eager (-> pass), needs torch."""
import protocol
import torch

META = {"id": "fx_pass", "title": "checked pass", "upstream": [], "description": "", "requires": [],
        "expect": []}


def _run(s):
    x = torch.arange(6.0).reshape(2, 3)
    s.check_close(torch.jit.trace(lambda t: t * 2 + 1, (x,))(x), x * 2 + 1, what="traced vs eager")


def _ran_only(s):
    torch.ones(3).sum()


def _wrong(s):
    s.check_close(torch.ones(3), torch.zeros(3), what="deliberately different")


def main(r):
    r.stage("trace_and_run", _run)
    r.stage("unchecked", _ran_only, role="info")
    r.stage("workaround", _run, role="workaround")
    r.stage("mismatch", _wrong, role="info")


if __name__ == "__main__":
    protocol.main(META, [], main)
