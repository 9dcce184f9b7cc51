"""Pieces tested alone, with no backend matrix: the package's layers, the reducers, the intake compactors."""
