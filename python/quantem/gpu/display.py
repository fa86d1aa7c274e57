"""Display: colormaps to RGBA uint8 (optionally enlarged and annotated with a colourbar and a scale bar),
histograms, FFT log magnitude, PNG.

Each runs where its input lives (its provenance's backend; a plain numpy array is host data: cpu).

    rgba = qgpu.display.render(dpc_row, symmetric=True, png_scale=4, annotate=True,
                               pixel_size=ds.metadata["calibration"]["scan_step_angstrom"])
    qgpu.display.write_png("dpc_row.png", rgba)
"""
from . import _qgpu
from ._args import document, keywords
from ._qgpu import write_png  # noqa: F401
from .result import Result, backend_of, wrap

DIVERGING = "RdBu_r"

document(write_png, """Writes an (rows, cols, 4) uint8 RGBA array (e.g. render's result) as a PNG file.

    path: the file (str or os.PathLike); written through a temporary file beside it.
    rgba: (rows, cols, 4) uint8 array.
    Raises: InvalidArgument (not (rows, cols, 4) or empty), IoError naming the path when it cannot be written.""")


@keywords
def render(image, colormap=None, scale="linear", percentiles=(0.0, 100.0), vmin=None, vmax=None, symmetric=False,
           png_scale=1, annotate=False, pixel_size=None):
    """Colours of a 2D image: a (rows, cols, 4) uint8 RGBA Result whose provenance records the display range.

    image: 2D array (float32 or convertible); NaN / inf pixels become transparent black.
    colormap: "viridis", "magma", "inferno", "plasma", "gray" or the diverging "RdBu_r". Default None:
        "RdBu_r" when symmetric, else "viridis".
    scale: "linear" (default), "log" (log(1 + max(v, 0))) or "signed_log" (sign(v) log(1 + |v|)).
    percentiles: (low, high), 0..100: the display range from the scaled finite values. Default (0, 100).
    vmin, vmax: explicit range ends in the scaled domain, each replacing its percentile. Default None.
    symmetric: for signed maps (DPC, CoM offsets): the range becomes [-m, m], m the larger magnitude of its
        ends, so 0 lands mid-map. Default False.
    png_scale: enlarge N times, nearest neighbour (1..64; the CLI's --png-scale). Default 1.
    annotate: add a colourbar on the right, labelled with the range ends in data units (and 0 inside), and, when
        pixel_size is given, a scale bar bottom left (the CLI's --annotate). Default False.
    pixel_size: the size of one image pixel: a number in angstrom (scan-space images: the file's
        calibration "scan_step_angstrom" times any scan binning), or (value, "angstrom" | "mrad") (mrad for
        diffraction patterns: "detector_mrad_per_pixel"). Default None: no scale bar.

    The provenance's "parameters" hold colormap, scale, lo, hi and "figure" (png_scale, pixel_size, scale_bar
    {length, unit, label, pixels}, colorbar {lo, hi, labels}).
    Raises: InvalidArgument (unknown colormap or scale, bad percentiles / vmin / vmax, png_scale outside 1..64,
    a pixel size not finite and > 0 or of another unit), BackendUnavailable (a cuda Result without a GPU)."""
    if colormap is None:
        colormap = DIVERGING if symmetric else "viridis"
    unit = "angstrom"
    if isinstance(pixel_size, (tuple, list)):
        if len(pixel_size) != 2:
            raise _qgpu.InvalidArgument("render: pixel_size is a number (angstrom) or (value, unit)")
        pixel_size, unit = pixel_size
    return wrap(_qgpu.render(image, colormap, scale, percentiles, vmin, vmax, backend_of(image), bool(symmetric),
                             png_scale, bool(annotate), None if pixel_size is None else float(pixel_size), unit))


@keywords
def histogram(image, scale="linear", percentiles=(0.0, 100.0), vmin=None, vmax=None):
    """Counts of the colour indices render would give: (counts, lo, hi).

    image: 2D array; scale, percentiles, vmin, vmax: as for render.
    Returns counts (256 uint64, a Result with provenance: 256 equal bins over [lo, hi] of the scaled finite values,
    below lo in bin 0, above hi in bin 255, non-finite pixels skipped) and the range ends lo, hi (scaled domain).
    Raises: InvalidArgument (bad scale, percentiles or range), BackendUnavailable."""
    counts, lo, hi, prov = _qgpu.histogram(image, scale, percentiles, vmin, vmax, backend_of(image))
    return Result(counts, prov), lo, hi


@keywords
def render_pattern(pattern, colormap="inferno", png_scale=1, annotate=False, pixel_size=None):
    """RGBA of a diffraction pattern with the dark-field halo visible: log(1 + v / eps), eps = the smallest positive
    value (one count over the scan for a mean pattern), shown from 0 to its 99.9th percentile.

    pattern: 2D array (e.g. detector.mean_pattern(ds)).
    colormap: as for render. Default "inferno".
    png_scale, annotate: as for render (the colourbar shows the displayed log(1 + v / eps)).
    pixel_size: mrad per detector pixel ("detector_mrad_per_pixel" of the calibration) for a scale bar; a bare
        number is taken as mrad here. Default None.
    Raises: InvalidArgument (a pattern with no positive value, bad options)."""
    view = wrap(_qgpu.pattern_log(pattern, backend_of(pattern)))
    if pixel_size is not None and not isinstance(pixel_size, (tuple, list)):
        pixel_size = (pixel_size, "mrad")
    return render(view, colormap=colormap, percentiles=(0.0, 99.9), vmin=0.0, png_scale=png_scale, annotate=annotate,
                  pixel_size=pixel_size)


@keywords
def fft_log_magnitude(image):
    """log(1 + |FFT2(image)|), forward and unnormalised, fftshifted (zero frequency at (rows // 2, cols // 2)), as a
    float32 Result on the image's backend.

    image: 2D array.
    Raises: InvalidArgument (an empty image), BackendUnavailable."""
    return wrap(_qgpu.fft_log_magnitude(image, backend_of(image)))
