"""quantem.gpu: load 4D-STEM HDF5 data onto the GPU and compute images from it.

    import quantem.gpu as qgpu
    ds = qgpu.io.load("scan.h5", backend="cuda")
    bf = qgpu.detector.bf(ds)            # numpy uint64 array ...
    bf.provenance                        # ... with the provenance of the computation

Backends: "cuda" (production), "cpu" (reference, only when asked for), "auto" (cuda; never falls back to cpu).
"""
from ._qgpu import (  # noqa: F401
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
from . import device, io, detector, dpc, display, ssb, parallax, movie, cache  # noqa: F401,E402
