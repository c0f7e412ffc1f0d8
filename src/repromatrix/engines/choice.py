"""Which engine makes each stack's environment: decided here and only here.

Run stage. A ``local`` stack always runs its own interpreter. Other stacks go to
``--backend`` (or the matrix's ``defaults.backend``), which is one engine or a
fallback chain such as ``docker|venv`` (nox's ``uv|virtualenv``):

- one engine insists: its preflight failing stops the run (exit 2/3), as always;
- a chain gives each stack the first engine whose preflight passes *for that
  stack* (an engine that cannot work here at all, ``EngineUnavailable``, is
  passed over for every stack at once). A stack whose CUDA wheel index cannot
  be reached may use PyPI's wheel instead (``pypi_instead``): where the compat
  table says PyPI's wheel is the same CUDA build, or, on the stand-in lane,
  PyPI's build of the same releases; the choice says so, and so does each
  record (``backend_reason``, the stack's ``pinned_index``). A stack no
  engine can make is not run: its cells are recorded ``skip`` with every
  engine's reason (a machine without docker or a registry is not a broken
  environment).

The choice and its reason are said once per run and recorded in each record
(``Result.backend``, ``Result.backend_reason``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from repromatrix.config import compat
from repromatrix.errors import EngineUnavailable, HarnessError, UsageError
from repromatrix.model import Stack, StackGroup
from repromatrix.textsafe import first_line, listed

from . import Engine, EngineContext, engine_class, load_engine, parse_backend, standins

UNAVAILABLE_PREFIX = "unavailable:"  # the fingerprint of a stack no engine can make here


@dataclass(frozen=True)
class Choice:
    """One stack's engine (None: no engine of the chain can make it here), the stack as
    that engine makes it (its index may be PyPI's: ``pypi_instead``), and why."""

    stack: Stack
    engine: Engine | None
    reason: str = ""
    pinned_index: str = ""  # the CUDA index the matrix pins, when the stack is made from PyPI instead

    @property
    def engine_name(self) -> str:
        return self.engine.name if self.engine is not None else ""


class Engines:
    """The engines of one run, by name, and which one serves each stack."""

    def __init__(self, ctx: EngineContext, backend: str) -> None:
        self.ctx = ctx
        self.chain = parse_backend(backend)
        self._by_name: dict[str, Engine] = {}
        self._down: dict[str, str] = {}  # engine name -> why it cannot work here at all
        self.choices: dict[str, Choice] = {}

    @property
    def fallback(self) -> bool:
        return len(self.chain) > 1

    def engine(self, name: str) -> Engine:
        if name not in self._by_name:
            self._by_name[name] = load_engine(name, self.ctx)
        return self._by_name[name]

    def choose(self, groups: Iterable[StackGroup]) -> list[StackGroup]:
        """Decide every stack's engine (running the preflights) and return the groups with
        their stacks as they will be made. One engine: a failed preflight raises."""
        groups = list(groups)
        for g in groups:
            if g.stack.kind == "local":
                self.choices[g.stack.id] = Choice(g.stack, self.engine("local"), "a local stack")
        rest = [g.stack for g in groups if g.stack.kind != "local"]
        if rest and self.fallback:
            for stack in rest:
                self.choices[stack.id] = self._first_that_works(stack)
            self._together(rest)
        elif rest:
            self._insist(self.chain[0], rest)
        local = [self.choices[g.stack.id].stack for g in groups if g.stack.kind == "local"]
        if local:
            self.engine("local").preflight(local)
        return [replace(g, stack=self.choices[g.stack.id].stack) for g in groups]

    def _insist(self, name: str, stacks: list[Stack]) -> None:
        engine = self.engine(name)
        for stack in stacks:
            if stack.kind not in engine.stack_kinds:
                raise UsageError(f"--backend {name} cannot run {stack.kind} stacks ({stack.id}); "
                                 f"it runs {', '.join(engine.stack_kinds)} stacks")
        engine.preflight(stacks)
        for stack in stacks:
            self.choices[stack.id] = Choice(stack, engine, f"--backend {name}")

    def _together(self, stacks: list[Stack]) -> None:
        """Each engine's preflight once more over all the stacks it was given: what holds
        stack by stack may not hold for all of them at once (the disk their environments
        take together); that fails the run before anything is built."""
        by_engine: dict[str, list[Stack]] = {}
        for stack in stacks:
            choice = self.choices[stack.id]
            if choice.engine is not None:
                by_engine.setdefault(choice.engine_name, []).append(choice.stack)
        for name, chosen in by_engine.items():
            if len(chosen) > 1:
                self.engine(name).preflight(chosen)

    def _first_that_works(self, stack: Stack) -> Choice:
        why_not: list[str] = []  # why each earlier engine of the chain cannot make it
        for name in self.chain:
            kinds = engine_class(name).stack_kinds
            if stack.kind not in kinds:
                why_not.append(f"{name} makes {'/'.join(kinds)} stacks only")
                continue
            if name in self._down:
                why_not.append(f"{name}: {self._down[name]}")
                continue
            ok, why = self._try(name, stack)
            instead = pypi_instead(stack, getattr(self.engine(name), "lane", ())) \
                if ok is None and name not in self._down else None
            if instead is not None:
                ok, _ = self._try(name, instead[0])
                if ok is not None:
                    return Choice(ok, self.engine(name), _said(
                        name, why_not, f"{stack.index} unreachable: {first_line(why, past_intro=True)}; "
                                       f"{instead[1]}"), pinned_index=stack.index or "")
            if ok is not None:
                return Choice(ok, self.engine(name), _said(name, why_not))
            why_not.append(f"{name}: {first_line(why, past_intro=True)}")
        return Choice(stack, None, f"cannot be made here by {'|'.join(self.chain)}: "
                                   + "; ".join(why_not))

    def _try(self, name: str, stack: Stack) -> tuple[Stack | None, str]:
        """(the stack, "") when ``name``'s preflight passes for it, else (None, why)."""
        try:
            self.engine(name).preflight([stack])
            return stack, ""
        except EngineUnavailable as exc:
            self._down[name] = first_line(exc, past_intro=True)
            return None, str(exc)
        except HarnessError as exc:
            return None, str(exc)

    def say(self, log: Callable[[str], None]) -> None:
        """The engine choice, once per run: how many stacks each engine makes, and why not
        the earlier engines of the chain; the stacks no engine can make here."""
        if not self.fallback:
            return
        by_reason: dict[tuple[str, str], list[str]] = {}
        for sid, choice in self.choices.items():
            if choice.stack.kind != "local":
                by_reason.setdefault((choice.engine_name, choice.reason), []).append(sid)
        for (name, reason), sids in by_reason.items():
            log(f"engine {name or 'none'} for {listed(sids, 4)}: {reason}")


def pypi_instead(stack: Stack, lane: tuple[str, ...]) -> tuple[Stack, str] | None:
    """PyPI's build of a stack pinned to a CUDA wheel index that cannot be reached, and why it
    may take the pinned build's place: the compat table says it is the same CUDA build; or
    the stack is on the stand-in lane (``lane``: the engine's stand-ins), whose verdicts are
    about torch-tensorrt's own Python code, the same in PyPI's build of the same releases.
    None when neither holds. Pure: the table only, nothing built or probed."""
    index, torch = stack.index or "", stack.torch or ""
    if not index.startswith("cu"):
        return None
    same = compat.pypi_same_build(torch, index)
    if same:
        return replace(stack, index=compat.PYPI_INDEX), f"torch from PyPI instead ({same})"
    cuda = compat.pypi_cuda(torch)
    if not cuda or not standins.applies(stack, lane):
        return None
    return (replace(stack, index=compat.PYPI_INDEX, cuda=cuda),
            f"PyPI's build of the same releases instead (torch {torch} there is the CUDA {cuda} "
            f"build, not {index}'s CUDA {stack.cuda or '?'}): the stand-in lane's verdicts come "
            f"from torch-tensorrt's own code, which both builds carry")


def _said(name: str, why_not: list[str], extra: str = "") -> str:
    notes = [*why_not, *([extra] if extra else [])]
    return f"{name}, the first of the chain that works here" + (f" ({'; '.join(notes)})" if notes else "")
