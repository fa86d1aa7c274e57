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

from ._qgpu import (Dataset, InvalidArgument, convert, discover, formats, inspect, load, write_products_emd,  # noqa: F401
                    write_sample, write_tiff)
from ._args import document

ASARRAY_LIMIT_BYTES = 1 << 30

_RAW = """    format: "auto" (recognised by content) or a reader's name from formats() ("hdf5", "npy", "merlin", "mrc", "empad",
        "raw").
    dtype, detector_shape, offset, frame_header, frame_footer: format="raw" only: the counts' dtype ("uint16",
        ...), the frame shape (rows, cols), bytes before the first frame, and bytes before / after each frame.
    flip_rows: Merlin: flip each frame's rows (rosettasciio's orientation). Default False.
    single_file: Merlin: read only the named .mib, not the other files of its acquisition. Default False."""

document(load, """Loads a 4D-STEM file onto a backend: a Dataset (scan rows x scan cols x detector rows x
    detector cols).

    path: the file (str or os.PathLike).
    backend: "cuda" (GPU), "cpu" (host reference), "vulkan" (portable GPU backend: AMD, Intel, Apple through
        MoltenVK, Android; integer data, dense; decoded on the host, then resident in Vulkan device memory) or
        "auto" (cuda; never falls back to cpu or vulkan). Default "auto".
    dataset: HDF5 dataset path; "" (default) discovers it (see discover()).
    scan_shape: (rows, cols) replacing the stored scan shape; () (default) = from the file.
    scan_region, detector_region: (row0, col0, rows, cols) rectangles to load; None (default) = everything.
    bin_scan, bin_detector: exact integer sums over n x n scan positions / detector pixels. Default 1.
    pixel_mask: "keep" (default) or "zero" (the file's bad pixels set to 0), or a mask of your own: a path (.npy
        of integers or bools, or "row col" lines) or an array of the full stored frame's shape; nonzero = bad.
    decoder: "auto" (default), "quantem" (ours: GPU on cuda, all cores on cpu) or "hdf5" (filter pipeline, cpu).
    read_threads: pread threads; 0 (default) = one per hardware thread.
    direct_io: O_DIRECT reads, for cold files on disk. Default False.
    progress: None (default) or a callable progress(fraction) called from the loading thread with the fraction
        done, 0.0 .. 1.0 (e.g. to drive a progress bar).
    representation: "auto" (default: dense when it fits under the admission limit, else encoded), "dense" or
        "encoded" (compact exact encoded-v1 form).
    radial_basis: "auto" (default), "on" or "off": with an encoded load, also build exact prefix images over
        detector shells of integer radius around the BF disk centre, answering centred BF/ADF/annular sums and the
        CoM without decoding (docs/design.md "Radial basis"; auto: from 1024x1024 scan positions when it fits).
        radial_basis_center: (row, col) of its centre; default the disk fit of the first loaded batch.
    scan_binned: "auto" (default), "off" or a scan bin b: with an encoded load, also keep the exact sums of b x b
        scan positions as an encoded copy with b^2 fewer frames; virtual images and the CoM asked at a scan_bin that
        b divides decode it instead (any mask, the same integers). auto: the viewer's display bin when a scan side
        passes 1024 positions and the copy fits. describe(ds)["scan_binned"] reports it.
    admission_fraction: share of the free GPU memory (cuda) or available host memory (cpu) a load may take.
        Default 0.8.
""" + _RAW + """

    Binned data holds uint32 / int32 / float32 sums; unbinned data keeps its dtype (float64 loads as float32).
    NaN / inf values are zeroed at load (and counted).

    Raises: IoError (missing or unreadable file, or an unknown format), FormatError (a malformed file, a scan
    shape that cannot be decided), RegionError (a region or bin outside the data), InvalidArgument (bad options;
    a load that does not fit), BackendUnavailable (cuda without a GPU), OutOfMemory, and ArgumentTypeError (a
    TypeError) naming an unknown keyword or a wrong type.""")

document(convert, """Writes any file load() reads (with its regions, bins and pixel mask) as a DECTRIS-style
    bitshuffle+LZ4 HDF5 file (/entry/data/data of (frames, det_r, det_c), one frame per chunk, filter 32008, a
    scan_shape attribute, /entry/calibration, /entry/provenance; the pixel mask at
    /entry/instrument/detector/detectorSpecific/pixel_mask) or, with to="npy", a 4D .npy with a JSON sidecar
    (OUT.json: calibration, pixel mask, provenance), or with to="emd" a py4DSTEM EMD 1.0 file (datacube +
    Calibration: R_pixel_size in A, Q_pixel_size in mrad or A^-1; py4DSTEM.read opens it). The counts are the load's, bit for bit: load(out) equals
    load(path, ...). Calibration follows the region and binning (scan step x bin_scan, detector mrad/px x
    bin_detector, beam centre moved). Float data: NaN / inf were zeroed by the load, so they are 0 in the output.
    Returns a dict: path, sidecar, shape, dtype, dense_bytes, file_bytes, load_seconds, write_seconds,
    calibration, provenance.

    path: the file to convert (str or os.PathLike).
    out: the file to write (absent or a regular file; replaced atomically).
    to: "h5" (default) or "npy".
    threads: encoder threads; 0 (default) = one per core.
    block: bitshuffle block size in elements (a multiple of 8); 0 (default) = the plugin's default.
    backend, dataset, scan_shape, scan_region, detector_region, bin_scan, bin_detector, pixel_mask, decoder,
        read_threads, direct_io, representation, admission_fraction: as load().
    progress: None (default) or a callable progress(fraction) called with the fraction of frames written.
""" + _RAW + """

    Raises: what load() raises; IoError when the output cannot be written (a folder, FIFO, device),
    InvalidArgument for bad options or an output that is the input.""")

document(inspect, """Describes a file without loading it (metadata, readiness): a dict whose "shape" is None when the
    scan shape is unknown (then "frames", "detector_shape" and "scan_shape_needed" say what to give),
    "calibration_detail" holds each calibration value ({key: {value, unit, source}}: scan_step_angstrom in
    angstrom per scan pixel, detector_mrad_per_pixel, energy_kev, ...) and "metadata_warnings" the values seen
    but not used.

    path: the file (str or os.PathLike).
    dataset: HDF5 dataset path; "" (default) discovers it.
    scan_shape: (rows, cols) replacing the stored scan shape; () (default) = from the file.
""" + _RAW + """

    Raises: IoError (missing, unreadable, unknown format), FormatError (malformed file), InvalidArgument.""")

document(discover, """The 4D datasets of an HDF5 file that load() can read, as a list of dataset paths.

    path: the HDF5 file (str or os.PathLike).
    Raises: IoError (missing or unreadable file), FormatError (not HDF5).""")

document(formats, """The file formats the source layer reads: a list of dicts {"name", "description",
    "recognised_by_content"} (a format not recognised by content, e.g. "raw", is read only when named).

    formats()  (no parameters)""")

document(write_sample, """Writes the built-in simulated sample (a 4D-STEM HDF5 file with its calibration).

    path: the file to write (str or os.PathLike).
    scan, detector: (rows, cols) of the scan and of each frame. Defaults (32, 32) and (64, 64).
    dtype: the counts' dtype ("uint8", "uint16", "uint32", ...). Default "uint16".
    defocus: Krivanek C1 in angstrom (chi = pi lambda C1 k^2, probe exp(-i chi)): positive = overfocus, i.e.
        C1 = -defocus of py4DSTEM / abTEM / Kirkland (docs/conventions.md). Default 0.
    dose: electrons per frame; 0 (default) = noise-free expected counts.
    seed: the noise's random seed. Default 1.
    energy: beam energy, keV. Default 300.  semiangle: convergence semi-angle, mrad. Default 20.
    files: 0 (default) = one file; N > 0 = a master file plus N data files <stem>_data_NNNNNN.h5 beside it.
    byte_order: the counts' byte order in the file, "little" (default) or "big".
    astigmatism: (A1 angstrom, angle degrees), the ssb convention (py4DSTEM phi12 = 90 - angle). Default (0, 0).
    rotation, transpose: the detector turned against the scan as qgpu.dpc.calibrate_rotation reports it
        (transpose first; a square detector). Defaults 0, False.
    defocus_hint: write calibration/defocus_angstrom (the nominal sign); the truth (/entry/truth) has it anyway.
        Default True.
    Raises: InvalidArgument (bad shapes, dtype or byte order), IoError (cannot write).""")


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


document(Dataset.read, """Copies a scan x detector rectangle to a numpy array (native dtype, 4D).

    scan_region, detector_region: (row0, col0, rows, cols) in scan positions / detector pixels; None (default) = all.
    Raises: RegionError (a rectangle outside the data), OutOfMemory.""")
document(Dataset.describe, """A dict describing the dataset: shape, dtype, backend, representation, residency, nbytes,
    resident_bytes, dense_bytes, storage_schema, metadata, provenance. ds.describe() takes no parameters.""")
document(Dataset.to_host, """The same data as a new Dataset on the cpu backend (a copy). ds.to_host() takes no
    parameters.""")
document(Dataset.to_device, """The same data as a new Dataset on the cuda backend (a copy). ds.to_device() takes no
    parameters. Raises: BackendUnavailable without a usable GPU, OutOfMemory.""")
document(Dataset.to_vulkan, """The same dense integer data as a new Dataset on the vulkan backend (a copy).
    ds.to_vulkan() takes no parameters. Raises: BackendUnavailable without a Vulkan device (or for an encoded
    dataset), DTypeError for float data, OutOfMemory.""")
document(Dataset.to_encoded, """The same counts in the exact encoded representation (encoded-v1) on the same backend.

    tile: frames per encoded tile. Default 512.
    Raises: DTypeError (data the encoding cannot hold, e.g. float), OutOfMemory.""")

Dataset.__getitem__ = _getitem
Dataset.__array__ = _array
Dataset.ndim = property(lambda ds: 4)
Dataset.__len__ = lambda ds: ds.shape[0]


document(write_tiff, """Writes a 2D image as a 32-bit float TIFF (baseline, uncompressed, little-endian) that ImageJ /
    Fiji open with its pixel size: XResolution / YResolution in pixels per unit and the unit in the ImageJ
    description (ImageJ=1.11a, unit=..., min, max). Returns the path.

    path: the file to write (replaced atomically).
    image: a 2D array (converted to float32).
    pixel_size: the size of one pixel in `unit` (e.g. 0.05 with unit "nm"); 0 (default) = not calibrated.
    unit: "nm", "mrad", ... ("" default: none).""")

document(write_products_emd, """Writes several 2D products into one py4DSTEM / emdfile EMD 1.0 file (root
    "quantem_products": one Array per product with data, dim0 / dim1 = [0, pixel size] and units, and the root's
    Calibration: R_pixel_size from scan_step_angstrom, Q_pixel_size from detector_mrad_per_pixel). Returns the path.

    path: the file to write (replaced atomically).
    products: {name: array} or {name: (array, pixel_size, unit)} of 2D arrays (stored as float32).
    calibration: None (default) or {key: value} of our calibration keys (ds.metadata["calibration"]).""")
