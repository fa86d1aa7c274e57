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
