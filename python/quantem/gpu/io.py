"""4D-STEM input through the source layer: formats() lists the readers (HDF5, NumPy .npy, raw frames, ...), files
are recognised by their content (format="auto"); inspect (metadata, readiness), discover (HDF5 datasets), load, and
the built-in simulated sample. format="raw" (headerless frames) takes dtype, detector_shape, offset, frame_header and
frame_footer.

inspect(path) never fails for want of a scan shape: then "shape" is None, "frames" and "detector_shape" are set
and "scan_shape_needed" says what to give (load(..., scan_shape=(rows, cols))). "calibration_detail" holds each
calibration value with its unit and source (our /entry/calibration, an ARINA sidecar, DECTRIS NeXus metadata),
"metadata_warnings" the values seen but not used.

A loaded Dataset indexes like a 4D numpy array of exact counts (native dtype): ds[r, c] is one frame,
ds[r0:r1, c0:c1] a block of frames, ds[..., 10:20, 10:20] a detector window (ints, slices with any step,
negative indices, ...); only the bounding rectangle is copied from the GPU. np.asarray(ds) copies everything
and refuses beyond ASARRAY_LIMIT_BYTES (use indexing or ds.read(region) for big data)."""
import numpy as np

from ._qgpu import Dataset, InvalidArgument, discover, formats, inspect, load, write_sample  # noqa: F401

ASARRAY_LIMIT_BYTES = 1 << 30


def _axis(key, n, axis):
    """One index -> (start, stop, step, drop): the rectangle to read and how to pick from it."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        i = int(key) + (n if key < 0 else 0)
        if not 0 <= i < n:
            raise IndexError(f"index {int(key)} is out of bounds for axis {axis} with size {n}")
        return i, i + 1, 1, True
    if isinstance(key, slice):
        start, stop, step = key.indices(n)
        if step < 0:  # read the covered rectangle forwards, reverse when picking
            return start, stop, step, False
        return start, max(start, stop), step, False
    raise IndexError(f"Dataset indices are ints or slices, got {type(key).__name__} on axis {axis}")


def _getitem(ds, key):
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (4 - len(key) + 1) + key[i + 1:]
    if len(key) > 4:
        raise IndexError(f"too many indices for a 4D dataset: {len(key)}")
    key = key + (slice(None),) * (4 - len(key))
    shape = ds.shape
    axes = [_axis(k, n, a) for a, (k, n) in enumerate(zip(key, shape))]
    lo, hi, pick = [], [], []
    for start, stop, step, drop in axes:
        if step > 0:
            a, b = start, stop
            pick.append(0 if drop else slice(0, b - a, step))
        else:  # negative step: covered indices stop+1 .. start
            a, b = stop + 1, start + 1
            pick.append(slice(b - a - 1, None, step) if b > a else slice(0, 0))
        lo.append(a)
        hi.append(max(a, b))
    if any(h == l for l, h in zip(lo, hi)):  # empty selection: numpy shape, no read
        out = np.empty([h - l for l, h in zip(lo, hi)], dtype=ds.dtype)
    else:
        out = ds.read((lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]), (lo[2], lo[3], hi[2] - lo[2], hi[3] - lo[3]))
    return out[tuple(pick)]


def _array(ds, dtype=None, copy=None):
    if ds.nbytes > ASARRAY_LIMIT_BYTES:
        raise InvalidArgument(f"np.asarray(dataset) would copy {ds.nbytes} bytes (limit "
                              f"quantem.gpu.io.ASARRAY_LIMIT_BYTES = {ASARRAY_LIMIT_BYTES}); index it "
                              "(ds[r0:r1, c0:c1]) or use ds.read(scan_region, detector_region)")
    out = ds.read()
    return out if dtype is None else out.astype(dtype)


Dataset.__getitem__ = _getitem
Dataset.__array__ = _array
Dataset.ndim = property(lambda ds: 4)
Dataset.__len__ = lambda ds: ds.shape[0]
