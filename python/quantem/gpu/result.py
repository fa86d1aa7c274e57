import numpy as np


class Result(np.ndarray):
    """A numpy array that carries the provenance (dict) of the computation that produced it.

    Only the result itself carries it: anything derived with numpy (slices, arithmetic, astype) is a plain
    ndarray without provenance, and reductions (bf.sum(), bf.max()) give plain numbers.

    pixel_size: (value, "angstrom" | "mrad") when known (a result of a Dataset with a calibrated scan step or
    detector; qgpu.rich), else None. In a notebook a 2D Result shows as its image with a colourbar (and a scale bar
    when pixel_size is known)."""

    def __new__(cls, array, provenance, pixel_size=None):
        obj = np.asarray(array).view(cls)
        obj.provenance = provenance
        obj.pixel_size = pixel_size
        return obj

    def __array_finalize__(self, obj):
        self.provenance = None  # set by Result(...) only
        self.pixel_size = None

    def _repr_png_(self):
        from .rich import result_png
        return result_png(self)

    def _repr_html_(self):
        from .rich import result_html
        return result_html(self)

    def __array_wrap__(self, out, context=None, return_scalar=False):
        out = np.asarray(out).view(np.ndarray)
        return out[()] if out.ndim == 0 else out

    def __getitem__(self, key):
        item = super().__getitem__(key)
        return item.view(np.ndarray) if isinstance(item, np.ndarray) else item



def _plain(name):
    def method(self, *args, **kwargs):
        return getattr(np.ndarray, name)(self.view(np.ndarray), *args, **kwargs)
    method.__name__ = name
    method.__doc__ = getattr(np.ndarray, name).__doc__
    return method


# Methods that derive a new array or number from a Result give plain numpy values.
for _name in ("astype", "copy", "reshape", "ravel", "flatten", "transpose", "squeeze", "sum", "mean", "min", "max",
              "std", "var", "prod", "cumsum", "round", "clip"):
    setattr(Result, _name, _plain(_name))
del _name


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
        names.append((prov.get("backend") or "cpu") if isinstance(prov, dict) else "cpu")
    if len(set(names)) > 1:
        raise InvalidArgument("inputs live on different backends (" + ", ".join(names) + ")")
    return names[0]
