"""repromatrix.report."""
