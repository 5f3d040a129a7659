"""Placeholder classes: importable, subclassable, never functional."""


class Placeholder:
    """Stands for a Transformer Engine class; constructing one says TE is a stub here."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__}: transformer_engine is a test stub here")


def placeholders(module_globals: dict, *names: str) -> None:
    """Define each name as its own Placeholder subclass in the calling module."""
    module = module_globals["__name__"]
    for name in names:
        module_globals[name] = type(name, (Placeholder,), {"__module__": module})


def unavailable(*args, **kwargs):
    """Stands for a Transformer Engine function; calling it says TE is a stub here."""
    raise RuntimeError("transformer_engine is a test stub here")
