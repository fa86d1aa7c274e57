"""quantem.gpu: load 4D-STEM HDF5 data onto the GPU and compute images from it.

    import quantem.gpu as qgpu
    ds = qgpu.io.load("scan.h5", backend="cuda")
    bf = qgpu.detector.bf(ds)            # numpy uint64 array ...
    bf.provenance                        # ... with the provenance of the computation

Backends: "cuda" (production), "cpu" (reference, only when asked for), "vulkan" (portable GPU backend, only when
asked for; docs/design.md lists its operations), "auto" (cuda; never falls back to cpu or vulkan).
"""
from . import _qgpu, _args


class ArgumentTypeError(_qgpu.InvalidArgument, TypeError):
    """An argument the call cannot take (wrong type, or an integer out of range), named in the message."""


ArgumentTypeError.__module__ = __name__
# Every compiled function and method: pybind11's "incompatible function arguments" dump -> ArgumentTypeError
# naming the argument; a bare std::bad_alloc -> OutOfMemory naming the call's numeric arguments.
_args.install(_qgpu, ArgumentTypeError, _qgpu.OutOfMemory)

from ._qgpu import (  # noqa: F401,E402
    BackendUnavailable,
    Dataset,
    DeviceError,
    DTypeError,
    Error,
    FormatError,
    InvalidArgument,
    IoError,
    OutOfMemory,
    RegionError,
    __version__,
)
from .result import Result  # noqa: F401
from . import device, io, detector, dpc, display, ssb, parallax, movie, cache, rich, live  # noqa: F401,E402

Dataset.calibration = property(rich.calibration, doc=rich.Calibration.__doc__)
Dataset._repr_html_ = rich.dataset_html
Dataset._repr_png_ = rich.dataset_png


def __getattr__(name):
    """qgpu.widget is imported on first use (it needs traitlets; anywidget for the interactive view)."""
    if name == "widget":
        import importlib
        return importlib.import_module(".widget", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
