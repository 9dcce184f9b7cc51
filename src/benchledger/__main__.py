"""``python -m benchledger`` runs the command line."""

from benchledger.cli.main import main

main()
