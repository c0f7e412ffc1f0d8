"""repromatrix.backends.docker."""
