"""Keeping up with releases: what PyPI publishes (``pypi``, PEP 691 pages and wheel
METADATA), the facts read from it (``facts``) and the rows and matrix stanzas the
compatibility table lacks (``update``, `repromatrix compat update`)."""
