"""What holds under attack and accident: crashes, concurrency, tampering, hostile input, secrets, snapshots, upgrades."""
