"""repromatrix.store."""
