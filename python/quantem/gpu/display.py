"""Display: colormaps to RGBA uint8, histograms, FFT log magnitude, PNG.

Each runs where its input lives (its provenance's backend; a plain numpy array is host data: cpu)."""
from . import _qgpu
from .result import Result, backend_of, wrap
from ._qgpu import write_png  # noqa: F401


def render(image, colormap="viridis", scale="linear", percentiles=(0.0, 100.0), vmin=None, vmax=None):
    """(rows, cols, 4) uint8 RGBA Result."""
    return wrap(_qgpu.render(image, colormap, scale, percentiles, vmin, vmax, backend_of(image)))


def histogram(image, scale="linear", percentiles=(0.0, 100.0), vmin=None, vmax=None):
    """(counts[256], lo, hi) with counts.provenance."""
    counts, lo, hi, prov = _qgpu.histogram(image, scale, percentiles, vmin, vmax, backend_of(image))
    return Result(counts, prov), lo, hi


def render_pattern(pattern, colormap="inferno"):
    """RGBA of a diffraction pattern with the dark-field halo visible: log(1 + v / eps), eps = the smallest positive
    value (one count over the scan for a mean pattern), shown from 0 to its 99.9th percentile."""
    view = wrap(_qgpu.pattern_log(pattern, backend_of(pattern)))
    return render(view, colormap=colormap, percentiles=(0.0, 99.9), vmin=0.0)


def fft_log_magnitude(image):
    return wrap(_qgpu.fft_log_magnitude(image, backend_of(image)))
