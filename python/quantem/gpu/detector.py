"""Virtual detectors: exact uint64 masked sums per scan position, as numpy arrays with .provenance."""
from . import _qgpu
from .result import Result, wrap
from ._qgpu import annulus_mask, disk_mask, fit_bf_disk  # noqa: F401


def bf(ds, radius=None, center=None):
    """Bright field through a disk (default: the fitted BF disk)."""
    return wrap(_qgpu.bf(ds, radius, center))


def adf(ds, inner=None, outer=None, center=None):
    """Annular dark field: inner <= distance <= outer pixels around center (default: BF disk centre). Without radii:
    inner = 1.2 x the fitted BF disk radius, outer = min(3 x that radius, distance to the detector edge)."""
    if (inner is None) != (outer is None):
        raise _qgpu.InvalidArgument("adf: give both inner and outer radii, or neither")
    if inner is None:
        inner, outer = _qgpu.default_adf_radii(ds, center)
    return wrap(_qgpu.adf(ds, inner, outer, center))


def df(ds, center, radius):
    """Dark field through an off-axis disk."""
    return wrap(_qgpu.df(ds, center, radius))


def virtual_image(ds, mask):
    """Sum of mask x frame for every scan position, exact. mask is detector-shaped; the result dtype follows it:
    bool / unsigned integer weights (< 2^32) -> uint64; signed integer weights (|w| < 2^32) -> int64;
    float weights -> int64 when every weight is a whole number, else InvalidArgument (never truncated)."""
    return wrap(_qgpu.virtual_image(ds, mask))


def sum_pattern(ds):
    return wrap(_qgpu.sum_pattern(ds))


def max_pattern(ds):
    """Largest count of each detector pixel over all scan positions (uint64, exact)."""
    return wrap(_qgpu.max_pattern(ds))


def mean_pattern(ds):
    return wrap(_qgpu.mean_pattern(ds))


__all__ = ["bf", "adf", "df", "virtual_image", "sum_pattern", "mean_pattern", "max_pattern", "fit_bf_disk", "disk_mask",
           "annulus_mask", "Result"]
