"""Command-line behaviour: each command's output, formats, errors and exit codes, what a process loads at startup."""
