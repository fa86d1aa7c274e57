import numpy as np


class Result(np.ndarray):
    """A numpy array that carries the provenance (dict) of the computation that produced it."""

    def __new__(cls, array, provenance):
        obj = np.asarray(array).view(cls)
        obj.provenance = provenance
        return obj

    def __array_finalize__(self, obj):
        self.provenance = getattr(obj, "provenance", None)


def wrap(pair):
    """(array, provenance) from the compiled core -> Result."""
    array, provenance = pair
    return Result(array, provenance)


def backend_of(*arrays):
    """The one dispatch rule: an operation runs where its inputs live. A Result carries its backend in its
    provenance; anything else (a plain numpy array, a derived array) is host data and runs on "cpu". Inputs of
    one operation must agree."""
    from ._qgpu import InvalidArgument
    names = []
    for a in arrays:
        prov = getattr(a, "provenance", None)
        names.append(prov.get("backend") or "cpu" if isinstance(prov, dict) else "cpu")
    if len(set(names)) > 1:
        raise InvalidArgument("inputs live on different backends (" + ", ".join(names) + ")")
    return names[0]
