"""Stage 1, the inputs: matrix.yaml, the repro catalog, the compatibility table and the options.

Importing any of these declares the options' variables (``flags``), so ``envvars.read``
knows them wherever the inputs are read.
"""

from . import flags as flags  # noqa: F401  (declares each option once)
