"""repromatrix.run."""
