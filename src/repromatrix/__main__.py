"""``python -m repromatrix``: the command line."""

import sys

from repromatrix.cli import main

sys.exit(main())
