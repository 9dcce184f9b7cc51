"""``python -m benchledger`` runs the command line."""

from benchledger.cli.main import main

if __name__ == "__main__":  # (not when a replay's or audit's worker process imports this module)
    main()
