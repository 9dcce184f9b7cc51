"""Journeys as a user types them, command after command, on both backends."""
