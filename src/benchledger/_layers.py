"""The layers are imported as subpackages of benchledger, never by their folders' bare names."""


def refuse_bare_name(name: str) -> None:
    """Raise ImportError unless ``name``, a layer's ``__name__``, is under ``benchledger``.

    The repository keeps the layers as top-level folders, so from its root
    ``import ledger`` would find ``ledger/`` and load a second copy of every
    module beside ``benchledger.ledger`` (two ``Ledger`` classes, two receipt
    keys in one process). Each layer's ``__init__`` calls this first.
    """
    if not name.startswith("benchledger."):
        raise ImportError(f"import benchledger.{name}, not {name}: the layers are subpackages of benchledger", name=name)
