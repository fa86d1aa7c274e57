"""Movies (MP4 with H.264, or GIF) of a loaded dataset, rendered on the dataset's backend and encoded with FFmpeg.

    path, n = qgpu.movie.render(ds, "adf.mp4", sweep="adf", range=(10, 40), frames=100, label=True)

sweep: "bf" (BF radius over range), "adf" (ADF inner radius over range; outer = inner + adf_width, or adf_outer,
or the whole detector), "path_row" (diffraction frames of scan row `row`), "path_line" (frames on the scan line
`line` = (r0, c0, r1, c1)), "ssb_defocus" (SSB phase with C1 over range, angstrom; file calibration).
Options: frames, center (detector row, col), colormap, scale ("linear" | "log" | "signed_log"; paths default to
log), percentiles (per frame display range), size (width, height), resize ("nearest" | "area"), label, fps,
encoder ("auto" | "libx264" | "h264_nvenc" for mp4). The extension (.mp4 / .gif) picks the container.
"""
from . import _qgpu
from ._args import keywords

_OPTIONS = """
    ds: a loaded Dataset.  path: the output file (str or os.PathLike); .mp4 (H.264) or .gif picks the container.
    sweep: "bf", "adf", "path_row", "path_line" or "ssb_defocus" (see the module). Default "adf".
    range: (start, stop), start <= stop, of the swept value: radius in detector pixels (bf, adf; >= 0) or C1 in
        angstrom (ssb_defocus); give it for these sweeps (None = (0, 0)).
    frames: number of frames, 1..100000. Default None: 30 for sweeps, every column for path_row,
        max(|r1 - r0|, |c1 - c0|) + 1 for path_line.
    row: path_row: the scan row. Default 0.  line: path_line: (r0, c0, r1, c1) scan positions.
    adf_width: adf: outer = inner + adf_width (px); adf_outer: a fixed outer radius (px); at most one. Default None:
        the whole detector.
    center: (row, col) detector centre of the disks and annuli. Default: the fitted BF disk centre.
    colormap: as display.render. Default "viridis".
    scale: "linear", "log" or "signed_log". Default None: "log" for path sweeps, else "linear".
    percentiles: (low, high) per-frame display range. Default None: the full range.
    size: (width, height) of the output. Default None: the frame's own size.
    resize: "nearest" or "area" (default).  label: burn the swept value into each frame. Default False.
    fps: frames per second, 1..60. Default 10.
    encoder: "auto" (default), "libx264" or "h264_nvenc" (mp4), "gif".

    Raises: InvalidArgument (bad options, before anything is rendered), ArgumentTypeError (a TypeError) naming an
    unknown keyword and the known ones, IoError (cannot write), BackendUnavailable."""


def _options(**options):
    return {k: v for k, v in options.items() if v is not None}


@keywords
def render(ds, path, sweep="adf", range=None, frames=None, *, row=None, line=None, adf_width=None, adf_outer=None,
           center=None, colormap=None, scale=None, percentiles=None, size=None, resize=None, label=None, fps=None,
           encoder=None):
    """Writes the movie; returns (path, frame count). Bad options raise before anything is rendered.
"""
    info = render_info(ds, path, sweep=sweep, range=range, frames=frames, row=row, line=line, adf_width=adf_width,
                       adf_outer=adf_outer, center=center, colormap=colormap, scale=scale, percentiles=percentiles,
                       size=size, resize=resize, label=label, fps=fps, encoder=encoder)
    return info["path"], info["frames"]


@keywords
def render_info(ds, path, sweep="adf", range=None, frames=None, *, row=None, line=None, adf_width=None,
                adf_outer=None, center=None, colormap=None, scale=None, percentiles=None, size=None, resize=None,
                label=None, fps=None, encoder=None):
    """As render, returning {'path', 'frames', 'width', 'height', 'encoder', 'render_seconds', 'encode_seconds'}.
"""
    opts = _options(row=row, line=line, adf_width=adf_width, adf_outer=adf_outer, center=center, colormap=colormap,
                    scale=scale, percentiles=percentiles, size=size, resize=resize, label=label, fps=fps,
                    encoder=encoder)
    opts.update(range=range, frames=frames)
    return _qgpu.movie_render(ds, path, sweep, opts)


def nvenc_available():
    """True when libavcodec's h264_nvenc opens on this machine (then mp4 "auto" uses it). No parameters."""
    return _qgpu.movie_nvenc_available()


for _f in (render, render_info):
    _f.__doc__ += _OPTIONS
del _f
