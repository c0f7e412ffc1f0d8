"""A stand-in for TensorRT made by repromatrix: it only satisfies imports.

``_standin.py make`` copies this file as ``tensorrt/__init__.py`` with ``standin.json``
beside it: the TensorRT version torch-tensorrt was built for (data, never code).
"""
import importlib.abc
import importlib.machinery
import sys
import types


def _version():
    import json
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin.json")) as f:
        return json.load(f)["version"]


__standin__ = True
__version__ = _version()
_ABSENT = ("tensorrt_rtx",)  # another package: feature probes (hasattr) must not find it


class _PlaceholderType(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _placeholder(name)
        setattr(cls, name, value)  # the same placeholder every time (identity checks)
        return value

    def __repr__(cls):
        return "<tensorrt stand-in %s>" % cls.__name__


class _Placeholder(metaclass=_PlaceholderType):
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(name)

    def __call__(self, *args, **kwargs):
        return _placeholder("call")()


def _placeholder(name):
    return _PlaceholderType(str(name), (_Placeholder,), {})


def __getattr__(name):
    if name.startswith("__") or name in _ABSENT:
        raise AttributeError(name)
    value = _placeholder(name)
    globals()[name] = value
    return value


def _submodule(name):
    module = types.ModuleType(name)
    module.__path__ = []
    module.__standin__ = True

    def attribute(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = _placeholder(attr)
        setattr(module, attr, value)
        return value

    module.__getattr__ = attribute
    return module


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Any tensorrt.<name> (tensorrt.plugin, ...) imports as a placeholder module."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _submodule(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.append(_Submodules())
tensorrt = sys.modules[__name__]  # like TensorRT's own tensorrt.tensorrt: the same names
