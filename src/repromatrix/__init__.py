"""repromatrix: a compatibility matrix and reproduction harness for the PyTorch deployment stack."""

# The one place the version is written: pyproject reads it ([tool.setuptools.dynamic]), and
# records' harness_version and cache keys use it, so it changes only for a release.
__version__ = "0.1.0"
