"""Every option names a real field, and every RunOptions field that is an option is declared."""

from __future__ import annotations

from dataclasses import fields

from repromatrix import envvars
from repromatrix.config.flags import OPTIONS
from repromatrix.config.options import RunOptions
from repromatrix.model import Settings

DERIVED = {"sources", "standins_from_matrix"}  # worked out by the resolver, no option's own


def test_every_option_names_a_real_field() -> None:
    run_fields = {f.name for f in fields(RunOptions)}
    for opt in OPTIONS:
        assert opt.fills is None or opt.fills in run_fields, opt.flag
        assert opt.setting is None or opt.setting in Settings.__dataclass_fields__, opt.flag
        assert not (opt.fills and opt.setting), f"{opt.flag} fills two places"
        if opt.matrix:
            assert opt.matrix.split(".", 1)[1] in Settings.__dataclass_fields__, opt.flag
        if opt.env:
            assert opt.env in envvars.VARIABLES, opt.flag


def test_every_run_option_is_declared_once() -> None:
    filled = [opt.fills for opt in OPTIONS if opt.fills]
    assert len(filled) == len(set(filled)), "a RunOptions field is filled by two options"
    assert set(filled) == {f.name for f in fields(RunOptions)} - DERIVED


def test_every_matrix_setting_option_is_a_settings_override() -> None:
    """An option with a matrix key either fills RunOptions or overrides that setting."""
    for opt in OPTIONS:
        if opt.matrix and not opt.fills:
            assert opt.setting == opt.matrix.split(".", 1)[1], opt.flag
