"""The report's presentation: Jinja2 templates, Plotly figures, the static site writer and the read-only server.

Imported only by ``benchledger report`` and ``benchledger serve`` (its
libraries are the optional ``report`` extra; ingest and the reviews never load them).
"""
