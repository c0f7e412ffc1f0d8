"""Keeping up with releases: what PyPI publishes (``pypi``, PEP 691 pages and wheel
METADATA), the facts read from it (``facts``) and the rows and matrix stanzas the
compatibility table lacks (``update``, `repromatrix compat update`)."""

PYPI_URL = "https://pypi.org"  # the default package index (here: every command's parser names it)
