"""Virtual detectors: masked sums per scan position, as numpy arrays with .provenance: exact uint64 for unsigned
counts, exact int64 for signed-integer data, float64 sums for float data."""
import warnings

from . import _qgpu
from .result import Result, wrap
from ._args import document, keywords
from ._qgpu import annulus_mask, disk_mask  # noqa: F401

document(disk_mask, """A bool (rows, cols) mask: True where the distance from (center_row, center_col) is <= radius.

    rows, cols: the detector shape, pixels. center_row, center_col, radius: detector pixels.
    Raises: InvalidArgument (an empty shape, a radius not finite or negative).""")

document(annulus_mask, """A bool (rows, cols) mask: True where inner <= distance from (center_row, center_col) <= outer.

    rows, cols: the detector shape, pixels. center_row, center_col, inner, outer: detector pixels.
    Raises: InvalidArgument (an empty shape, radii not finite or inner > outer).""")


class DiskFitUncertain(UserWarning):
    """The bright-field disk fit is uncertain (confidence < 0.5, e.g. a bright lobe around the disk): give the disk's
    center= and radius= (the CLI's --center/--radius)."""


def _warn_fit(fit, stacklevel=4):  # the caller of a public function (one frame of _args.keywords between)
    if fit and fit.get("warning"):
        warnings.warn(fit["warning"], DiskFitUncertain, stacklevel=stacklevel)


def _warn_provenance(provenance, key="bf_disk_fit", stacklevel=5):
    _warn_fit(((provenance or {}).get("parameters") or {}).get(key), stacklevel)


@keywords
def fit_bf_disk(ds):
    """ds: a loaded Dataset.
    The bright-field disk of the summed pattern: {'center': (row, col), 'radius', 'confidence' (0..1),
    'confident', 'center_source', 'radius_source', 'edge_levels', 'method', 'other_edge_radius' (a second edge, e.g. a
    lobe around the disk), 'warning'}. Warns (DiskFitUncertain) when the confidence is below 0.5."""
    fit = _qgpu.fit_bf_disk(ds)
    _warn_fit(fit)
    return fit


@keywords
def bf(ds, radius=None, center=None, scan_bin=1):
    """Bright field: the sum of each frame inside a disk, a scan-shaped Result (exact integer sums).

    ds: a loaded Dataset.
    radius: disk radius, detector pixels. Default None: the fitted BF disk's.
    center: (row, col), detector pixels. Default None: the fitted BF disk's centre.
    scan_bin: b > 1 (a divisor of both scan sides) gives the exact sums of b x b blocks of scan positions, a
    (rows/b, cols/b) Result (on a large scan, binned on the GPU by the radial basis); default 1.
    Raises: InvalidArgument (a radius not finite or <= 0); warns DiskFitUncertain when a default came from an
    uncertain fit."""
    out = wrap(_qgpu.bf(ds, radius, center, scan_bin))
    _warn_provenance(out.provenance)
    return out


@keywords
def adf(ds, inner=None, outer=None, center=None, radius=None, scan_bin=1):
    """ds: a loaded Dataset; inner, outer, radius in detector pixels, center (row, col) in detector pixels.
    scan_bin: b > 1 (a divisor of both scan sides): the exact sums of b x b blocks of scan positions; default 1.
    Annular dark field: inner <= distance <= outer pixels around center (default: the BF disk centre). Without
    radii: inner = 1.2 x the BF disk radius (`radius`, default: the fitted one), outer = min(3 x that radius,
    distance to the detector edge). Warns (DiskFitUncertain) when a default came from an uncertain fit.
    Raises: InvalidArgument (only one of inner / outer, both inner and radius, inner > outer)."""
    if (inner is None) != (outer is None):
        raise _qgpu.InvalidArgument("adf: give both inner and outer radii, or neither")
    if inner is not None and radius is not None:
        raise _qgpu.InvalidArgument("adf: radius (the BF disk's) sets the default radii: give it or inner/outer")
    if inner is None:
        inner, outer = _qgpu.default_adf_radii(ds, center, radius)
        if center is None or radius is None:  # the radii or the centre came from the fit (cached on the dataset)
            _warn_fit(_qgpu.fit_bf_disk(ds))
        out = wrap(_qgpu.adf(ds, inner, outer, center, scan_bin))
    else:
        out = wrap(_qgpu.adf(ds, inner, outer, center, scan_bin))
        _warn_provenance(out.provenance)
    return out


@keywords
def df(ds, center, radius, scan_bin=1):
    """Dark field through an off-axis disk: the sum of each frame within radius of center.

    ds: a loaded Dataset. center: (row, col), detector pixels. radius: detector pixels.
    scan_bin: b > 1 (a divisor of both scan sides): the exact sums of b x b blocks of scan positions; default 1.
    Raises: InvalidArgument (no center, a radius not finite or <= 0)."""
    return wrap(_qgpu.df(ds, center, radius, scan_bin))


@keywords
def virtual_image(ds, mask, scan_bin=1):
    """ds: a loaded Dataset; mask: a detector-shaped array of weights; scan_bin: b > 1 (a divisor of both scan sides)
    sums b x b blocks of scan positions too (exact), a (rows/b, cols/b) Result; default 1.
    Sum of mask x frame for every scan position, exact for integer data. mask is detector-shaped; the result dtype
    follows it and the data: bool / unsigned integer weights (< 2^32) -> uint64 on counts; signed integer weights
    (|w| < 2^32) or signed data -> int64; float data -> float64. Float weights are taken when every weight is a whole
    number, else InvalidArgument (never truncated)."""
    return wrap(_qgpu.virtual_image(ds, mask, scan_bin))


@keywords
def sum_pattern(ds):
    """ds: a loaded Dataset. The detector-shaped sum of all frames (exact: uint64 counts, int64, float64)."""
    return wrap(_qgpu.sum_pattern(ds))


@keywords
def max_pattern(ds):
    """ds: a loaded Dataset.
    Largest value of each detector pixel over all scan positions (exact: uint64 counts, int64, float64)."""
    return wrap(_qgpu.max_pattern(ds))


@keywords
def mean_pattern(ds):
    """ds: a loaded Dataset. The detector-shaped mean of all frames (float32 counts per frame)."""
    return wrap(_qgpu.mean_pattern(ds))


__all__ = ["bf", "adf", "df", "virtual_image", "sum_pattern", "mean_pattern", "max_pattern", "fit_bf_disk", "disk_mask",
           "annulus_mask", "DiskFitUncertain", "Result"]
