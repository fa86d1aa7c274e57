"""Product cache: the first-look products of a dataset computed from one load into a versioned HDF5 file.

    qgpu.cache.build(ds, "products.h5", bf_radii=[12], adf=[(24, 46)])
    c = qgpu.cache.open("products.h5")
    bf = c["bf"]                       # numpy uint64 Result with .provenance, read without the raw data
    c.products, c.geometry, c.rotation, c.stale

Layout and format version: docs/design.md ("Product cache"). A product the cache lacks raises
ProductUnavailable naming it; a changed source file makes open() warn (or raise StaleCache with strict=True).
"""
import warnings

from . import _qgpu
from ._qgpu import ProductUnavailable, StaleCache, cache_format_version, is_cache_file  # noqa: F401
from .result import Result, wrap
from ._args import document, keywords

document(is_cache_file, """True when path is a product cache (an HDF5 file with the cache's format marker).

    path: a file (str or os.PathLike); a missing or non-HDF5 file answers False.""")


@keywords
def build(ds, path, bf_radii=(), adf=()):
    """Computes every product from `ds` and writes the cache at `path`; returns the product names.

    ds: a loaded Dataset. path: the cache file to write (str or os.PathLike).
    bf_radii: extra bright-field radii, detector pixels (the fitted disk's BF is always there). Default ().
    adf: extra (inner, outer) annuli, detector pixels. Default ().
    Raises: InvalidArgument (bad radii), IoError (cannot write)."""
    return _qgpu.cache_build(ds, path, [float(r) for r in bf_radii], [(float(i), float(o)) for i, o in adf])


class ProductCache:
    """Products by name (`cache["bf"]`), each a numpy Result carrying its provenance."""

    def __init__(self, handle):
        self._c = handle

    path = property(lambda self: self._c.path)
    format_version = property(lambda self: self._c.format_version)
    products = property(lambda self: list(self._c.products))
    source = property(lambda self: self._c.source)
    attributes = property(lambda self: self._c.attributes)
    source_present = property(lambda self: self._c.source_present)
    stale = property(lambda self: list(self._c.stale))

    @property
    def geometry(self):
        """disk_center, disk_radius, scan_shape, detector_shape, calibration, provenance."""
        return self._c.geometry()

    @property
    def rotation(self):
        """angle_deg, transpose, curl_rms, divergence_rms, provenance."""
        return self._c.rotation()

    def __contains__(self, name):
        return self._c.has(name)

    def __getitem__(self, name):
        return wrap(self._c.get(name))

    def get(self, name):
        """The product `name` (e.g. "bf", "adf", "com_row", "idpc") as a numpy Result with its provenance; as
        cache[name]. Raises ProductUnavailable naming it when the cache lacks it."""
        return self[name]

    def provenance(self, name):
        """The provenance (dict) of the product `name`. Raises ProductUnavailable when the cache lacks it."""
        return self._c.provenance(name)

    def detector(self, name):
        """Geometry of the cached virtual detector `name`: kind, center, radius or inner/outer (detector pixels)."""
        return self._c.detector(name)

    def __repr__(self):
        return f"ProductCache({self.path!r}, format {self.format_version}, {len(self.products)} products)"


@keywords
def open(path, strict=False):  # noqa: A001 - the module's verb
    """Opens a cache: a ProductCache. A stale source warns (RuntimeWarning naming the change) or, with
    strict=True, raises StaleCache.

    path: the cache file (str or os.PathLike). strict: raise instead of warning. Default False.
    Raises: IoError / FormatError (not a readable cache), StaleCache (strict and stale)."""
    c = ProductCache(_qgpu.cache_open(path, bool(strict)))
    for change in c.stale:
        warnings.warn(f"cache {c.path!r} is stale: {change}", RuntimeWarning,
                      stacklevel=3)  # the caller (past _args.keywords)
    return c


__all__ = ["build", "open", "ProductCache", "ProductUnavailable", "StaleCache", "is_cache_file",
           "cache_format_version", "Result"]
