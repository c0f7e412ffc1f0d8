"""repromatrix.scripts."""
