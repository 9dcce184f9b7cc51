"""A speed path gives the same answer as the definition it stands for; the benchmark scripts run and print what they promise."""
