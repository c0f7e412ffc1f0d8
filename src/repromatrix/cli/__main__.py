"""``python -m repromatrix.cli`` (kept for scripts that call it so)."""

import sys

from . import main

sys.exit(main())
