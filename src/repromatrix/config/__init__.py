"""repromatrix.config."""
