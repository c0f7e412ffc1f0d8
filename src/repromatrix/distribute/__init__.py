"""repromatrix.distribute."""
