"""repromatrix: a compatibility matrix and reproduction harness for the PyTorch deployment stack."""

__version__ = "0.1.0"
