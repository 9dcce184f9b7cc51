"""The read room: goals, history and show views, runs, the report's views, JSON-in-SQL helpers.

Read models only read: they import the storage room, never the service room.
"""
