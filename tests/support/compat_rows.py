"""The compatibility table's torch 2.15.0 row, as the table held it before an update."""

from __future__ import annotations

import re

ROW_2150 = re.compile(r'^  "2\.15\.0": \{[^}]*\}$', re.M)  # one row, over one or more lines
BEFORE_2150 = ('  "2.15.0": {torchvision: [], python: ">=3.11", pypi_cuda: "13.2", indexes: [], src: V, '
               'note: "no torchvision release for 2.15 known"}')
