"""Display: colormaps to RGBA uint8, histograms, FFT log magnitude, PNG."""
from . import _qgpu
from .result import Result, wrap
from ._qgpu import write_png  # noqa: F401


def render(image, colormap="viridis", scale="linear", percentiles=(0.0, 100.0), vmin=None, vmax=None,
           backend="auto"):
    return wrap(_qgpu.render(image, colormap, scale, percentiles, vmin, vmax, backend))


def histogram(image, scale="linear", percentiles=(0.0, 100.0), vmin=None, vmax=None, backend="auto"):
    """(counts[256], lo, hi) with counts.provenance."""
    counts, lo, hi, prov = _qgpu.histogram(image, scale, percentiles, vmin, vmax, backend)
    return Result(counts, prov), lo, hi


def fft_log_magnitude(image, backend="auto"):
    return wrap(_qgpu.fft_log_magnitude(image, backend))
