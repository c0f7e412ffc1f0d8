"""repromatrix.releases."""
