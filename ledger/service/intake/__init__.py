"""Reading artifact files for ingest and the review commands: file types, size and encoding guards, kind detection."""
