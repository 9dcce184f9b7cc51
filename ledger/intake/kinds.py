"""Placeholder: the kind registry and normalize() dispatcher land with the intake work."""


def normalize(kind, value):
    raise NotImplementedError(kind)
