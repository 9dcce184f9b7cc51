"""One module per review command; each defines ``command`` (a click command)."""
