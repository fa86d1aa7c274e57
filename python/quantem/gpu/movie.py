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


def render(ds, path, sweep="adf", range=None, frames=None, **options):
    """Writes the movie; returns (path, frame count). Bad options raise before anything is rendered."""
    info = render_info(ds, path, sweep=sweep, range=range, frames=frames, **options)
    return info["path"], info["frames"]


def render_info(ds, path, sweep="adf", range=None, frames=None, **options):
    """As render, returning {'path', 'frames', 'width', 'height', 'encoder', 'render_seconds', 'encode_seconds'}."""
    known = {"row", "line", "adf_width", "adf_outer", "center", "colormap", "scale", "percentiles", "size",
             "resize", "label", "fps", "encoder"}
    unknown = set(options) - known
    if unknown:
        raise TypeError("qgpu.movie.render: unknown option(s) " + ", ".join(sorted(unknown)))
    opts = dict(options, range=range, frames=frames)
    return _qgpu.movie_render(ds, path, sweep, opts)


def nvenc_available():
    """True when libavcodec's h264_nvenc opens on this machine (then mp4 'auto' uses it)."""
    return _qgpu.movie_nvenc_available()
