"""The source layer's NumPy and raw readers against numpy itself: files written by numpy (np.save,
numpy.lib.format.write_array, ndarray.tofile), read back by qgpu.io.load and compared exactly, on every dtype and
byte order, dense, encoded and binned, cpu (and cuda where a GPU is usable)."""
import os
import re
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda

DTYPES = ["<u2", ">u2", "<u4", ">u4", "|u1"]


def counts(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.poisson(2.0, size=shape)
    a[..., shape[-2] // 2 - 2:shape[-2] // 2 + 2, shape[-1] // 2 - 2:shape[-1] // 2 + 2] += 200
    if np.dtype(dtype).itemsize >= 2:
        a[0, 0, 0, 0] = 0x1234 if np.dtype(dtype).itemsize == 2 else 0x12345678  # byte order visible
    return a.astype(dtype)


def bf_numpy(a, r0, r1, c0, c1):
    return a[..., r0:r1, c0:c1].astype(np.uint64).sum(axis=(-2, -1))


def test_formats_lists_the_readers():
    names = [f["name"] for f in qgpu.io.formats()]
    assert names == ["hdf5", "merlin", "npy", "mrc", "empad", "dm", "stempy", "libertem_csr", "raw"]
    assert {f["name"]: f["recognised_by_content"] for f in qgpu.io.formats()}["raw"] is False


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_4d_every_dtype_and_version(tmp_path, dtype, version):
    a = counts((5, 6, 12, 10), dtype)
    path = tmp_path / "a.data"  # the name says nothing: recognised by content
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    info = qgpu.io.inspect(str(path))
    assert info["reader"] == "npy" and info["shape"] == [5, 6, 12, 10]
    assert info["codec"] == "plain" and info["byte_order"] == ("big" if dtype[0] == ">" else "little")
    ds = qgpu.io.load(str(path), backend="cpu")
    out = np.asarray(ds)
    assert out.dtype == a.dtype.newbyteorder("=") and np.array_equal(out, a)
    assert ds.provenance["parameters"]["format"] == "npy"
    bf = qgpu.detector.virtual_image(ds, np.pad(np.ones((4, 4), bool), ((4, 4), (3, 3))))
    assert np.array_equal(bf, bf_numpy(a, 4, 8, 3, 7))


@pytest.mark.parametrize("dtype", ["<u2", ">u4"])
@pytest.mark.parametrize("representation", ["dense", "encoded"])
def test_npy_3d_scan_shape_regions_bins(tmp_path, dtype, representation):
    a = counts((4, 6, 12, 12), dtype, seed=2)
    path = tmp_path / "stack.npy"
    np.save(path, a.reshape(24, 12, 12))
    with pytest.raises(qgpu.FormatError, match="24 frames"):  # not square: the scan shape must be given
        qgpu.io.load(str(path), backend="cpu")
    ds = qgpu.io.load(str(path), backend="cpu", scan_shape=(4, 6), representation=representation,
                      scan_region=(1, 2, 2, 4), detector_region=(2, 2, 8, 8), bin_detector=2)
    ref = a[1:3, 2:6, 2:10, 2:10].astype(np.uint64).reshape(2, 4, 4, 2, 4, 2).sum(axis=(3, 5))
    assert ds.representation == representation
    assert np.array_equal(np.asarray(ds).astype(np.uint64), ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_npy_fortran_order_loads_like_numpy(tmp_path, dtype):
    a = counts((5, 6, 12, 10), dtype, seed=5)
    f4 = tmp_path / "f4.npy"
    np.save(f4, np.asfortranarray(a))  # numpy writes fortran_order: True for an F-contiguous array
    assert np.load(f4).flags.f_contiguous and not np.load(f4).flags.c_contiguous
    info = qgpu.io.inspect(str(f4))
    assert "Fortran order" in info["source_kind"] and info["metadata"]["fortran_order"] is True
    ds = qgpu.io.load(str(f4), backend="cpu")
    assert np.asarray(ds).dtype == a.dtype.newbyteorder("=") and np.array_equal(np.asarray(ds), np.load(f4))
    assert np.array_equal(np.asarray(ds), a) and ds.provenance["parameters"]["layout"] == "fortran_order"
    # 3D stack of frames (C-order scan order) with the scan shape given.
    f3 = tmp_path / "f3.npy"
    np.save(f3, np.asfortranarray(a.reshape(30, 12, 10)))
    ds3 = qgpu.io.load(str(f3), backend="cpu", scan_shape=(5, 6))
    assert np.array_equal(np.asarray(ds3), np.load(f3).reshape(5, 6, 12, 10))
    # Regions, binning, a given mask and encoded.
    mask = np.zeros((12, 10), bool)
    mask[[0, 5, 11], [0, 6, 9]] = True
    m = a.copy()
    m[..., mask] = 0
    got = qgpu.io.load(str(f4), backend="cpu", scan_region=(1, 2, 4, 4), detector_region=(2, 1, 8, 8), bin_scan=2,
                       bin_detector=2, pixel_mask=mask)
    ref = m[1:5, 2:6, 2:10, 1:9].astype(np.uint64).reshape(2, 2, 2, 2, 4, 2, 4, 2).sum(axis=(1, 3, 5, 7))
    assert np.array_equal(np.asarray(got).astype(np.uint64), ref)
    enc = qgpu.io.load(str(f4), backend="cpu", representation="encoded", detector_region=(3, 2, 5, 7))
    assert enc.representation == "encoded" and np.array_equal(np.asarray(enc), a[:, :, 3:8, 2:9])


def test_npy_fortran_order_refusals(tmp_path):
    a = counts((4, 4, 6, 6), "<u2")
    f = tmp_path / "f.npy"
    np.save(f, np.asfortranarray(a))
    with pytest.raises(qgpu.FormatError, match="Fortran-order array of scan 4 x 4"):
        qgpu.io.load(str(f), backend="cpu", scan_shape=(2, 8))
    with pytest.raises(qgpu.InvalidArgument, match="direct_io"):
        qgpu.io.load(str(f), backend="cpu", direct_io=True)
    out = subprocess.run([os.environ["QGPU_BIN"], "info", str(f)], check=True, capture_output=True, text=True).stdout
    assert "Fortran order" in out


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_npy_fortran_order_on_cuda_equals_numpy(tmp_path, dtype):
    a = counts((8, 6, 32, 24), dtype, seed=6)
    f = tmp_path / "f.npy"
    np.save(f, np.asfortranarray(a))
    assert np.array_equal(np.asarray(qgpu.io.load(str(f), backend="cuda")), a)
    for kw in ({"bin_scan": 2, "bin_detector": 2}, {"scan_region": (1, 1, 4, 4), "detector_region": (3, 5, 16, 8)},
               {"representation": "encoded"}, {"pixel_mask": a[0, 0] > 100}):
        cpu = np.asarray(qgpu.io.load(str(f), backend="cpu", **kw))
        assert np.array_equal(np.asarray(qgpu.io.load(str(f), backend="cuda", **kw)), cpu), kw


@pytest.mark.parametrize("dtype", ["|u1", "|b1", ">i8", "<u2"])
def test_merlin_with_a_given_pixel_mask(tmp_path, dtype):
    mn = merlin_numpy()
    mib = tmp_path / "acq.mib"
    subprocess.run([os.environ["QGPU_BIN"], "sample", str(mib), "--format", "mib", "--scan", "3", "4",
                    "--detector", "32", "24", "--counter-depth", "12"], check=True, capture_output=True)
    ref = mn.read_mib(str(mib))[1].reshape(3, 4, 32, 24)
    bad = np.zeros((32, 24), bool)
    bad[[0, 16, 16, 31], [0, 12, 11, 23]] = True  # the centre pixels lie in the bright-field disk
    want = ref.copy()
    want[..., bad] = 0
    assert not np.array_equal(want, ref)
    mask_path = tmp_path / "mask.npy"
    np.save(mask_path, (bad * 7).astype(dtype))
    for given in (str(mask_path), mask_path, bad, bad.astype(np.int32) * -3):
        ds = qgpu.io.load(str(mib), backend="cpu", pixel_mask=given)
        assert np.array_equal(np.asarray(ds), want), type(given)
        pv = ds.provenance["parameters"]
        assert pv["pixel_mask"] == "given" and pv["bad_pixels_zeroed"] == 4
        assert pv["pixel_mask_source"] == (str(mask_path) if not isinstance(given, np.ndarray) else "python array")
    binned = qgpu.io.load(str(mib), backend="cpu", pixel_mask=bad, bin_detector=4, scan_region=(1, 0, 2, 4))
    wb = want[1:3].astype(np.uint64).reshape(2, 4, 8, 4, 6, 4).sum(axis=(3, 5))
    assert np.array_equal(np.asarray(binned).astype(np.uint64), wb)
    assert np.array_equal(np.asarray(qgpu.io.load(str(mib), backend="cpu", pixel_mask="keep")), ref)
    with pytest.raises(qgpu.IoError, match="no pixel mask"):
        qgpu.io.load(str(mib), backend="cpu", pixel_mask="zero")
    with pytest.raises(qgpu.InvalidArgument, match=r"shape \(24, 32\).*32 x 24"):
        qgpu.io.load(str(mib), backend="cpu", pixel_mask=bad.T.copy())
    with pytest.raises(qgpu.DTypeError, match="float64"):
        qgpu.io.load(str(mib), backend="cpu", pixel_mask=bad.astype(float))
    with pytest.raises(qgpu.InvalidArgument, match="nothere.npy.*no such file"):
        qgpu.io.load(str(mib), backend="cpu", pixel_mask=str(tmp_path / "nothere.npy"))
    # The CLI flag (shared by every command that loads): qgpu info says why a load would be refused.
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.ones((4, 4), np.uint8))
    out = subprocess.run([os.environ["QGPU_BIN"], "info", str(mib), "--pixel-mask-file", str(wrong)],
                         capture_output=True, text=True)
    assert "(4, 4)" in out.stdout + out.stderr and "32 x 24" in out.stdout + out.stderr
    out = subprocess.run([os.environ["QGPU_BIN"], "info", str(mib), "--pixel-mask-file", str(mask_path)],
                         check=True, capture_output=True, text=True).stdout
    assert f"given: 4 bad pixels from {mask_path}" in out
    bf = {}
    for name, extra in (("plain", []), ("masked", ["--pixel-mask-file", str(mask_path)])):
        subprocess.run([os.environ["QGPU_BIN"], "image", str(mib), "--backend", "cpu", "-o", str(tmp_path / name),
                        "--bf", "3", "--center", "16", "12", *extra], check=True, capture_output=True)
        bf[name] = np.load(tmp_path / name / "bf.npy").astype(np.int64)
    # (16, 12) and (16, 11) lie in the BF disk; (0, 0) and (31, 23) outside it.
    lost = ref[..., 16, 12].astype(np.int64) + ref[..., 16, 11]
    assert lost.min() > 0 and np.array_equal(bf["masked"], bf["plain"] - lost)


@pytest.mark.parametrize("dtype", ["<u2", ">u2", "|u1"])
def test_raw_frames_with_offsets(tmp_path, dtype):
    a = counts((3, 3, 8, 6), dtype, seed=4)
    fb = a[0, 0].nbytes
    path = tmp_path / "frames.bin"
    with open(path, "wb") as f:
        f.write(b"\xaa" * 100)  # offset
        for fr in a.reshape(9, 8, 6):
            f.write(b"\x55" * 16 + fr.tobytes() + b"\x77" * 8)
    kw = dict(format="raw", dtype=dtype.replace("|", ""), detector_shape=(8, 6), offset=100, frame_header=16,
              frame_footer=8)
    ds = qgpu.io.load(str(path), backend="cpu", **kw)
    assert np.array_equal(np.asarray(ds), a) and ds.shape == (3, 3, 8, 6)
    # Named spellings of the byte order too.
    name = {"<u2": "uint16le", ">u2": "uint16be", "|u1": "uint8"}[dtype]
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu", **{**kw, "dtype": name})), a)
    assert fb == 48 * a.itemsize


def test_raw_and_npy_errors(tmp_path):
    raw = tmp_path / "r.bin"
    np.zeros(100, np.uint16).tofile(raw)
    with pytest.raises(qgpu.InvalidArgument, match="dtype and the detector shape"):
        qgpu.io.load(str(raw), backend="cpu", format="raw")
    with pytest.raises(qgpu.InvalidArgument, match="float16"):
        qgpu.io.load(str(raw), backend="cpu", format="raw", dtype="float16", detector_shape=(2, 2))
    with pytest.raises(qgpu.FormatError, match="past the end"):
        qgpu.io.load(str(raw), backend="cpu", format="raw", dtype="uint16", detector_shape=(2, 2), offset=999)
    with pytest.raises(qgpu.FormatError, match="needs 36 frames"):
        qgpu.io.load(str(raw), backend="cpu", format="raw", dtype="uint16", detector_shape=(2, 2), scan_shape=(6, 6))
    with pytest.raises(qgpu.InvalidArgument, match="format='raw'"):  # a raw layout for a file read otherwise
        qgpu.io.load(str(raw), backend="cpu", dtype="uint16", detector_shape=(2, 2))
    with pytest.raises(qgpu.IoError, match="not an HDF5 file.*npy"):  # nothing recognises it
        qgpu.io.load(str(raw), backend="cpu")
    with pytest.raises(qgpu.InvalidArgument, match="format 'tiff' is not one of"):
        qgpu.io.load(str(raw), backend="cpu", format="tiff")

    good = np.arange(2 * 2 * 4 * 4, dtype=np.uint16).reshape(2, 2, 4, 4)
    p = tmp_path / "g.npy"
    np.save(p, good)
    blob = p.read_bytes()
    cases = {
        "truncated": (blob[:-1], qgpu.FormatError, "truncated"),
        "header cut": (blob[:40], qgpu.FormatError, "header"),
        "version": (blob[:6] + b"\x07\x00" + blob[8:], qgpu.FormatError, "version 7"),
        "dict": (blob.replace(b"'shape'", b"'shapf'"), qgpu.FormatError, "unknown key 'shapf'"),
        "float16": (blob.replace(b"<u2", b"<f2"), qgpu.DTypeError, "'<f2'.*float32 or float64"),
        "complex": (blob.replace(b"<u2", b"<c8"), qgpu.DTypeError, "'<c8'"),
        "rank": (blob.replace(b"(2, 2, 4, 4)", b"(16, 4)     "), qgpu.FormatError, "2-dimensional"),
        "huge": (blob.replace(b"(2, 2, 4, 4)", b"(99999999999999999999, 2)"[:12]), qgpu.FormatError, ""),
    }
    for name, (data, err, match) in cases.items():
        q = tmp_path / f"bad_{name}.npy"
        q.write_bytes(data)
        with pytest.raises(err, match=match):
            qgpu.io.load(str(q), backend="cpu")
    # The same bytes flagged Fortran order are read as numpy reads them.
    q = tmp_path / "fortran_flag.npy"
    q.write_bytes(blob.replace(b"False", b"True "))
    assert np.load(q).flags.f_contiguous
    assert np.array_equal(np.asarray(qgpu.io.load(str(q), backend="cpu")), np.load(q))


def test_sample_writer_npy_and_raw_match_the_h5_sample(tmp_path):
    h5, npy, raw = (str(tmp_path / n) for n in ("s.h5", "s.npy", "s.raw"))
    qgpu.io.write_sample(h5, scan=(6, 5), detector=(16, 16), seed=7)
    ref = np.asarray(qgpu.io.load(h5, backend="cpu"))
    qgpu_bin = os.environ["QGPU_BIN"]  # the built qgpu (ctest sets it)
    subprocess.run([qgpu_bin, "sample", npy, "--format", "npy", "--scan", "6", "5", "--detector", "16", "16",
                    "--seed", "7", "--byte-order", "big"], check=True, capture_output=True)
    subprocess.run([qgpu_bin, "sample", raw, "--format", "raw", "--scan", "6", "5", "--detector", "16", "16",
                    "--seed", "7", "--offset", "10", "--frame-header", "3"], check=True, capture_output=True)
    assert np.array_equal(np.load(npy).reshape(ref.shape), ref)
    assert np.array_equal(np.asarray(qgpu.io.load(npy, backend="cpu", scan_shape=(6, 5))), ref)
    got = qgpu.io.load(raw, backend="cpu", format="raw", dtype="uint16", detector_shape=(16, 16), offset=10,
                       frame_header=3, scan_shape=(6, 5))
    assert np.array_equal(np.asarray(got), ref)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("representation", ["dense", "encoded"])
def test_npy_and_raw_on_cuda_equal_numpy(tmp_path, dtype, representation):
    a = counts((8, 8, 32, 32), dtype, seed=9)
    path = tmp_path / "a.npy"
    np.save(path, a)
    for kw in ({}, {"bin_scan": 2, "bin_detector": 2}, {"scan_region": (1, 1, 4, 6), "detector_region": (3, 5, 16, 8)}):
        cpu = np.asarray(qgpu.io.load(str(path), backend="cpu", representation=representation, **kw))
        gpu_ds = qgpu.io.load(str(path), backend="cuda", representation=representation, **kw)
        assert gpu_ds.representation == representation
        assert np.array_equal(np.asarray(gpu_ds), cpu), kw
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cuda")), a)
    raw = tmp_path / "a.raw"
    with open(raw, "wb") as f:
        f.write(b"\x01" * 7)  # odd offset: records not aligned in the batch
        f.write(a.tobytes())
    got = qgpu.io.load(str(raw), backend="cuda", format="raw", dtype=dtype, detector_shape=(32, 32), offset=7,
                       representation=representation)
    assert np.array_equal(np.asarray(got), a)


# Merlin .mib through the public load, against the independent numpy reader of tests/io/merlin (written from the
# format's description) on the 40 real files of ../shared/data/merlin and on the sample writer's files.
MERLIN_DIR = os.path.join(os.path.dirname(__file__), "..", "io", "merlin")
MERLIN_ZIP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "merlin",
                          "Merlin_Single_Quad.zip")


def merlin_numpy():
    import sys
    sys.path.insert(0, MERLIN_DIR)
    import merlin_numpy as mn
    return mn


@pytest.fixture(scope="module")
def real_merlin(tmp_path_factory):
    import zipfile
    assert os.path.exists(MERLIN_ZIP), f"the real Merlin files are missing: {MERLIN_ZIP}"
    d = tmp_path_factory.mktemp("merlin_real")
    with zipfile.ZipFile(MERLIN_ZIP) as z:
        z.extractall(d)
    return d


def test_merlin_real_files_load_exactly(real_merlin):
    mn = merlin_numpy()
    files = sorted(real_merlin.glob("*.mib"))
    assert len(files) == 20
    for path in files:
        _, ref = mn.read_mib(str(path))
        frames = ref
        info = qgpu.io.inspect(str(path), scan_shape=(1, len(frames)), single_file=True)
        assert info["reader"] == "merlin" and info["codec"] == "merlin", path
        ds = qgpu.io.load(str(path), backend="cpu", scan_shape=(1, len(frames)), single_file=True)
        got = np.asarray(ds)[0]
        assert got.shape == ref.shape and got.dtype == ref.dtype, (path, got.shape, ref.shape, got.dtype, ref.dtype)
        assert np.array_equal(got, ref), path
        flipped = np.asarray(qgpu.io.load(str(path), backend="cpu", scan_shape=(1, len(frames)), single_file=True,
                                          flip_rows=True))[0]
        assert np.array_equal(flipped, ref[:, ::-1, :]), path
    # The archive itself, opened as it comes: named as one, not read as frames.
    with pytest.raises(qgpu.IoError, match="it is a ZIP archive; extract the detector files"):
        qgpu.io.inspect(MERLIN_ZIP)
    # The fact the numpy reader is checked against: the 12-bit file's maximum, read big-endian (48904 if little).
    q12 = np.asarray(qgpu.io.load(str(real_merlin / "Single_1_Frame_CounterDepth_12_Rows_256.mib"), backend="cpu",
                                  scan_shape=(1, 1), single_file=True))
    assert q12.max() == 2239


@pytest.mark.parametrize("form", [["--counter-depth", "12", "--quad"], ["--counter-depth", "1", "--raw"],
                                  ["--counter-depth", "24", "--quad", "--raw"], ["--counter-depth", "6", "--files", "3"]])
def test_merlin_sample_loads_like_numpy(tmp_path, form):
    mn = merlin_numpy()
    out = tmp_path / "acq.mib"
    subprocess.run([os.environ["QGPU_BIN"], "sample", str(out), "--format", "mib", "--scan", "4", "6", *form],
                   check=True, capture_output=True)
    mibs = sorted(tmp_path.glob("*.mib"))
    ref = np.concatenate([mn.read_mib(str(f))[1] for f in mibs])
    ref = ref.reshape(4, 6, *ref.shape[1:])
    info = qgpu.io.inspect(str(mibs[0]))
    assert info["shape"][:2] == [4, 6] and info["reader"] == "merlin"
    for rep in ("dense", "encoded"):
        ds = qgpu.io.load(str(mibs[0]), backend="cpu", representation=rep)
        assert np.array_equal(np.asarray(ds), ref)
    binned = qgpu.io.load(str(mibs[0]), backend="cpu", bin_detector=2, scan_region=(1, 1, 2, 4))
    want = ref[1:3, 1:5].astype(np.uint64)
    want = want.reshape(2, 4, want.shape[2] // 2, 2, want.shape[3] // 2, 2).sum(axis=(3, 5))
    assert np.array_equal(np.asarray(binned).astype(np.uint64), want)


@requires_cuda
@pytest.mark.parametrize("form", [["--counter-depth", "12", "--quad"], ["--counter-depth", "1", "--raw"],
                                  ["--counter-depth", "24", "--quad", "--raw"], ["--counter-depth", "6", "--quad",
                                                                                  "--gap", "--files", "2"]])
def test_merlin_on_cuda_equals_cpu(tmp_path, form):
    out = tmp_path / "acq.mib"
    subprocess.run([os.environ["QGPU_BIN"], "sample", str(out), "--format", "mib", "--scan", "4", "6", *form],
                   check=True, capture_output=True)
    mib = str(sorted(tmp_path.glob("*.mib"))[0])
    for kw in ({}, {"representation": "encoded"}, {"bin_scan": 2, "bin_detector": 2}, {"flip_rows": True}):
        cpu = np.asarray(qgpu.io.load(mib, backend="cpu", **kw))
        gpu = np.asarray(qgpu.io.load(mib, backend="cuda", **kw))
        assert np.array_equal(gpu, cpu), kw


# MRC (Velox 4D, Direct Electron): files built here with struct and numpy per the MRC2014 header (NX, NY, NZ, MODE
# at 0/4/8/12, NEXT at 92, EXTTYP at 104, "MAP " at 208, machine stamp at 212), independent of qgpu's writer; the
# real Direct Electron files of ../shared/data/mrc read in place.
import struct  # noqa: E402

MRC_MODES = {0: "i1", 1: "i2", 2: "f4", 6: "u2"}
MRC_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "mrc")


def mrc_bytes(frames, mode, big=False, next_bytes=0, exttyp=b"", map_=True, dims=None):
    o = ">" if big else "<"
    nz, ny, nx = frames.shape
    h = bytearray(1024)
    struct.pack_into(o + "4i", h, 0, *(dims or (nx, ny, nz)), mode)
    struct.pack_into(o + "i", h, 92, next_bytes)
    h[104:108] = exttyp.ljust(4, b"\0")[:4]
    if map_:
        h[208:212] = b"MAP "
    h[212:214] = b"\x11\x11" if big else b"\x44\x44"
    return bytes(h) + b"\xab" * next_bytes + frames.astype(np.dtype(o + MRC_MODES[mode])).tobytes()


def mrc_values(mode, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(MRC_MODES[mode])
    if dt.kind == "f":
        return rng.normal(20.0, 50.0, size=shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dt)


@pytest.mark.parametrize("mode", [0, 1, 2, 6])
@pytest.mark.parametrize("big", [False, True])
def test_mrc_every_mode_and_byte_order_loads_exactly(tmp_path, mode, big):
    a = mrc_values(mode, (20, 12, 10), seed=mode)  # 12 rows x 10 cols: NX = 10 is the fastest axis
    path = tmp_path / "a.data"  # recognised by content ("MAP ")
    path.write_bytes(mrc_bytes(a, mode, big, next_bytes=384, exttyp=b"FEI1"))
    info = qgpu.io.inspect(str(path))
    assert info["reader"] == "mrc" and info["codec"] == "plain"
    assert info["byte_order"] == ("big" if big and mode != 0 else "little")
    assert info["metadata"]["NX"] == 10 and info["metadata"]["NY"] == 12 and info["metadata"]["MODE"] == mode
    assert "FEI1" in info["source_kind"] and info["metadata"]["EXTTYP"] == "FEI1"
    ds = qgpu.io.load(str(path), backend="cpu", scan_shape=(4, 5))
    out = np.asarray(ds)
    assert ds.provenance["parameters"]["format"] == "mrc"
    assert out.dtype == a.dtype and np.array_equal(out, a.reshape(4, 5, 12, 10))
    bf = qgpu.detector.virtual_image(ds, np.pad(np.ones((4, 4), bool), ((4, 4), (3, 3))))
    acc = np.float64 if a.dtype.kind == "f" else np.int64
    want = a.reshape(4, 5, 12, 10)[..., 4:8, 3:7].astype(acc).sum(axis=(-2, -1))
    np.testing.assert_allclose(bf, want, rtol=1e-12) if acc is np.float64 else np.testing.assert_array_equal(bf, want)


def test_mrc_square_frame_count_nan_and_format_name(tmp_path):
    a = mrc_values(2, (16, 6, 9), seed=4)
    a[3, 2, 1] = np.nan
    path = tmp_path / "nomap.mrc"
    path.write_bytes(mrc_bytes(a, 2, map_=False))
    with pytest.raises(qgpu.IoError, match="not an HDF5 file"):  # without "MAP " only when named
        qgpu.io.load(str(path), backend="cpu")
    ds = qgpu.io.load(str(path), backend="cpu", format="mrc")
    assert ds.provenance["parameters"]["nonfinite_values"] == 1
    assert np.array_equal(np.asarray(ds), np.nan_to_num(a, nan=0.0).reshape(4, 4, 6, 9))
    assert qgpu.io.inspect(str(path), format="mrc")["scan_shape_source"] == "square frame count"


def test_mrc_errors_name_file_and_field(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.uint16).reshape(2, 3, 4)
    cases = {
        "mode": (mrc_bytes(a, 6)[:12] + struct.pack("<i", 4) + mrc_bytes(a, 6)[16:], qgpu.DTypeError,
                 "MODE.*4 .complex float32"),
        "nx": (mrc_bytes(a, 6, dims=(-4, 3, 2)), qgpu.FormatError, "NX.* -4"),
        "nz": (mrc_bytes(a, 6, dims=(4, 3, 0)), qgpu.FormatError, "NZ.* 0"),
        "next": (mrc_bytes(a, 6)[:92] + struct.pack("<i", 99999) + mrc_bytes(a, 6)[96:], qgpu.FormatError,
                 "NEXT.*past the end"),
        "size": (mrc_bytes(a, 6, dims=(4, 3, 3)), qgpu.FormatError, "NZ 3.*truncated"),
        "short": (mrc_bytes(a, 6)[:600], qgpu.FormatError, "1024 bytes"),
    }
    for name, (data, err, match) in cases.items():
        q = tmp_path / f"bad_{name}.mrc"
        q.write_bytes(data)
        with pytest.raises(err, match=match) as e:
            qgpu.io.load(str(q), backend="cpu", format="mrc", scan_shape=(1, 2))
        assert str(q) in str(e.value)


def test_mrc_sample_writer_matches_the_h5_sample(tmp_path):
    h5 = str(tmp_path / "s.h5")
    qgpu.io.write_sample(h5, scan=(6, 5), detector=(16, 12), seed=7)
    ref = np.asarray(qgpu.io.load(h5, backend="cpu"))
    for dtype, order in [("uint16", "little"), ("int16", "big"), ("float32", "big"), ("int8", "little")]:
        out = str(tmp_path / f"s_{dtype}_{order}.mrc")
        subprocess.run([os.environ["QGPU_BIN"], "sample", out, "--format", "mrc", "--scan", "6", "5", "--detector",
                        "16", "12", "--seed", "7", "--dtype", dtype, "--byte-order", order], check=True,
                       capture_output=True)
        raw = open(out, "rb").read()
        o = ">" if order == "big" else "<"
        nx, ny, nz, mode = struct.unpack_from(o + "4i", raw, 0)
        assert (nx, ny, nz, raw[208:212]) == (12, 16, 30, b"MAP ") and MRC_MODES[mode] == np.dtype(dtype).str[1:]
        frames = np.frombuffer(raw, dtype=o + MRC_MODES[mode], offset=1024).reshape(6, 5, 16, 12)
        top = {"int8": 127, "int16": 32767}.get(dtype, 65535)
        assert np.array_equal(frames.astype(np.float64), np.minimum(ref, top).astype(np.float64))
        got = np.asarray(qgpu.io.load(out, backend="cpu", scan_shape=(6, 5)))
        assert got.dtype == np.dtype(dtype) and np.array_equal(got, frames)


def de_numpy(path):
    raw = open(path, "rb").read()
    nx, ny, nz, mode = struct.unpack_from("<4i", raw, 0)
    (next_bytes,) = struct.unpack_from("<i", raw, 92)
    return np.frombuffer(raw, dtype="<" + MRC_MODES[mode], offset=1024 + next_bytes, count=nx * ny * nz).reshape(
        nz, ny, nx)


def test_mrc_real_direct_electron_files(tmp_path):
    movie = os.path.join(MRC_DIR, "Custom_movie.mrc")
    assert os.path.exists(movie), f"the real Direct Electron files are missing: {MRC_DIR}"
    frames = de_numpy(movie)
    assert frames.shape == (30, 16, 16) and frames.dtype == np.uint16
    # In place: the scan-coordinates csv beside it is a custom scan (x 0, 2, 4 of a 5 x 5 scan, twice): every frame at
    # its listed position ("x,y" = column, row, as rosettasciio reads it), the two visits of a position summed (in
    # uint32), positions never listed empty and named in the metadata.
    xy = np.loadtxt(os.path.join(MRC_DIR, "Custom_scan_coordinates.csv"), delimiter=",", dtype=int)
    want = np.zeros((5, 5, 16, 16), np.uint32)
    for i, (x, y) in enumerate(xy):
        want[y, x] += frames[i]
    info = qgpu.io.inspect(movie)
    assert info["reader"] == "mrc" and info["scan_shape_known"] and info["shape"] == [5, 5, 16, 16]
    assert "Custom_scan_coordinates.csv" in info["scan_shape_source"]
    assert info["metadata"]["de_custom_scan"] == {"positions_listed": 30, "positions_never_scanned": 10,
                                                  "positions_visited_more_than_once": 15, "most_visits": 2}
    assert any("listed more than once" in w for w in info["warnings"])
    ds = qgpu.io.load(movie, backend="cpu")
    assert np.asarray(ds).dtype == np.uint32 and np.array_equal(np.asarray(ds), want)
    never = sorted(set(range(25)) - {int(y) * 5 + int(x) for x, y in xy})
    assert ds.metadata["missing"] == 10 and ds.metadata["missing_positions"] == never
    mask = np.zeros((16, 16), bool)
    mask[4:12, 4:12] = True
    vi = qgpu.detector.virtual_image(ds, mask)
    assert np.array_equal(vi, want[..., 4:12, 4:12].sum(axis=(-2, -1)))
    sub = np.asarray(qgpu.io.load(movie, backend="cpu", scan_region=(1, 1, 3, 4), bin_detector=2))
    assert np.array_equal(sub, want[1:4, 1:5].reshape(3, 4, 8, 2, 8, 2).sum(axis=(3, 5)))
    assert info["calibration"]["energy_kev"] == 300.0
    assert "Custom_info.txt" in info["calibration_detail"]["energy_kev"]["source"]
    assert info["calibration_detail"]["energy_kev"]["unit"] == "keV"
    # Given a scan shape, the frames load as numpy reads them (the csv named in a warning).
    ds = qgpu.io.load(movie, backend="cpu", scan_shape=(6, 5))
    assert np.array_equal(np.asarray(ds), frames.reshape(6, 5, 16, 16))
    assert any("not the plain raster" in w for w in ds.metadata["file"]["warnings"])
    # Without the csv an XY-file scan has no known order: refused.
    d = tmp_path / "nocsv"
    d.mkdir()
    os.symlink(movie, d / "Custom_movie.mrc")
    os.symlink(os.path.join(MRC_DIR, "Custom_info.txt"), d / "Custom_info.txt")
    with pytest.raises(qgpu.FormatError, match="Scan - Type = XY File.*Custom_scan_coordinates.csv' is missing"):
        qgpu.io.load(str(d / "Custom_movie.mrc"), backend="cpu")
    # A raster info.txt of 5 x 5 disagrees with the 30 frames: said, not reshaped.
    original = open(os.path.join(MRC_DIR, "Custom_info.txt")).read()
    raster = original.replace("Scan - Type                                                     = XY File",
                              "Scan - Type                                                     = Raster")
    assert raster != original
    (d / "Custom_info.txt").unlink()
    (d / "Custom_info.txt").write_text(raster)
    with pytest.raises(qgpu.FormatError, match="Scan - Size Y x Scan - Size X = 5 x 5 = 25 scan positions.*30 frames"):
        qgpu.io.load(str(d / "Custom_movie.mrc"), backend="cpu")
    # The same frames with a raster info.txt of 5 x 6: the scan shape is the info.txt's.
    six = "Scan - Size X                                                   = 6"
    (d / "Custom_info.txt").write_text(raster.replace(six[:-1] + "5", six))
    ds = qgpu.io.load(str(d / "Custom_movie.mrc"), backend="cpu")
    assert ds.shape == (5, 6, 16, 16) and np.array_equal(np.asarray(ds), frames.reshape(5, 6, 16, 16))
    # An XY-file scan with a plain-raster csv of 5 x 6: loaded with the info.txt's scan shape.
    text = original.replace(six[:-1] + "5", six)
    assert six in text
    r = tmp_path / "raster"
    r.mkdir()
    os.symlink(movie, r / "R_movie.mrc")
    (r / "R_info.txt").write_text(text)
    (r / "R_scan_coordinates.csv").write_text("".join(f"{i % 6},{i // 6}\n" for i in range(30)))
    ds = qgpu.io.load(str(r / "R_movie.mrc"), backend="cpu")
    assert ds.shape == (5, 6, 16, 16) and np.array_equal(np.asarray(ds), frames.reshape(5, 6, 16, 16))
    assert qgpu.io.inspect(str(r / "R_movie.mrc"))["scan_shape_source"] == (
        "DE info.txt R_info.txt Scan - Size Y x Scan - Size X")
    # Column-major positions: every frame at its position (each listed once: the stored dtype kept, none missing).
    (r / "R_scan_coordinates.csv").write_text("".join(f"{i // 5},{i % 5}\n" for i in range(30)))
    ds = qgpu.io.load(str(r / "R_movie.mrc"), backend="cpu")
    assert ds.shape == (5, 6, 16, 16) and np.asarray(ds).dtype == np.uint16
    assert np.array_equal(np.asarray(ds), frames.reshape(6, 5, 16, 16).transpose(1, 0, 2, 3))
    assert ds.metadata["missing"] == 0
    # A position outside the scan, or a csv whose length is not the frame count: named.
    (r / "R_scan_coordinates.csv").write_text("".join(f"{i // 5},{i % 5}\n" for i in range(29)) + "6,0\n")
    with pytest.raises(qgpu.FormatError, match=r"R_scan_coordinates.csv' line 30 \(6,0\) is outside"):
        qgpu.io.inspect(str(r / "R_movie.mrc"))
    (r / "R_scan_coordinates.csv").write_text("".join(f"{i // 5},{i % 5}\n" for i in range(29)))
    with pytest.raises(qgpu.FormatError, match="lists 29 positions for the 30 frames"):
        qgpu.io.inspect(str(r / "R_movie.mrc"))


def test_mrc_damaged_headers_fail_cleanly(tmp_path):
    """Random bytes in the header fields (and NEXT/size disagreements) end in a named qgpu error or a valid file."""
    a = mrc_values(6, (4, 6, 5), seed=9)
    good = bytearray(mrc_bytes(a, 6, next_bytes=64))
    rng = np.random.default_rng(11)
    path = tmp_path / "d.mrc"
    for k in range(300):
        blob = bytearray(good)
        for _ in range(int(rng.integers(1, 6))):
            at = int(rng.choice([0, 1, 3, 4, 7, 8, 11, 12, 15, 92, 93, 95, 104, 208, 212, 213]))
            blob[at] = int(rng.integers(0, 256))
        if k % 7 == 0:
            blob = blob[:int(rng.integers(0, len(blob)))]
        path.write_bytes(bytes(blob))
        try:
            info = qgpu.io.inspect(str(path), format="mrc")
        except (qgpu.FormatError, qgpu.DTypeError) as e:
            assert str(path) in str(e)
            continue
        assert info["frames"] * info["detector_shape"][0] * info["detector_shape"][1] <= len(blob)


def fei_block(size=640, version=2, ht=300000.0, px=1.5e-10, cl=0.115, big=False):
    """One FEI1/FEI2 metadata block as the MRC-2014 FEI specification packs it (mrcfile FEI_EXTENDED_HEADER_DTYPE):
    Metadata size i32 @0, version i32 @4, HT f8 @84, Pixel size X/Y f8 @156/@164, Camera length f8 @301."""
    o = ">" if big else "<"
    b = bytearray(size)
    struct.pack_into(o + "ii", b, 0, size, version)
    struct.pack_into(o + "d", b, 84, ht)
    struct.pack_into(o + "dd", b, 156, px, px)
    struct.pack_into(o + "d", b, 301, cl)
    return bytes(b)


@pytest.mark.parametrize("exttyp", [b"FEI1", b"FEI2"])
@pytest.mark.parametrize("big", [False, True])
def test_mrc_fei_extended_header_is_parsed_and_skipped(tmp_path, exttyp, big):
    a = mrc_values(6, (12, 8, 6), seed=3)
    blocks = fei_block(big=big) * 12
    raw = bytearray(mrc_bytes(a, 6, big, next_bytes=len(blocks), exttyp=exttyp))
    raw[1024:1024 + len(blocks)] = blocks
    path = tmp_path / "v.mrc"
    path.write_bytes(bytes(raw))
    info = qgpu.io.inspect(str(path), scan_shape=(3, 4))
    ext = info["metadata"]["extended_header"]
    assert ext["metadata_size"] == 640 and ext["blocks"] == 12 and ext["metadata_version"] == 2
    assert ext["pixel_size_x_m"] == pytest.approx(1.5e-10) and ext["HT_V"] == 300000.0
    cal = info["calibration"]
    assert cal["energy_kev"] == 300.0 and cal["camera_length_m"] == pytest.approx(0.115)
    assert cal["fei_pixel_size_m"] == pytest.approx(1.5e-10)
    assert "Pixel size X" in info["calibration_detail"]["fei_pixel_size_m"]["source"]
    o = ">" if big else "<"
    want = np.frombuffer(bytes(raw), dtype=o + "u2", offset=1024 + len(blocks)).reshape(3, 4, 8, 6)
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu", scan_shape=(3, 4))), want)


@pytest.mark.parametrize("size,message", [(0, "Metadata size .byte 1024. is 0"), (1 << 20, "is 1048576; it must be")])
def test_mrc_fei_block_size_malformed_is_named_and_the_frames_still_read(tmp_path, size, message):
    a = mrc_values(6, (4, 8, 6), seed=4)
    raw = bytearray(mrc_bytes(a, 6, next_bytes=640 * 4, exttyp=b"FEI1"))
    struct.pack_into("<i", raw, 1024, size)
    path = tmp_path / "m.mrc"
    path.write_bytes(bytes(raw))
    info = qgpu.io.inspect(str(path), scan_shape=(2, 2))
    assert any(re.search(message, w) for w in info["warnings"]), info["warnings"]
    assert "energy_kev" not in info["calibration"]
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu", scan_shape=(2, 2))), a.reshape(2, 2, 8, 6))


def test_mrc_legacy_fei_header_pixel_size(tmp_path):
    a = mrc_values(2, (4, 8, 6), seed=5)
    raw = bytearray(mrc_bytes(a, 2, next_bytes=131072))
    raw[1024:1024 + 131072] = bytes(131072)
    struct.pack_into("<f", raw, 1024 + 44, 2.5e-10)
    path = tmp_path / "l.mrc"
    path.write_bytes(bytes(raw))
    info = qgpu.io.inspect(str(path), scan_shape=(2, 2))
    assert info["metadata"]["extended_header"]["legacy_records"] == 1024
    assert info["calibration"]["fei_pixel_size_m"] == pytest.approx(2.5e-10)
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu", scan_shape=(2, 2))), a.reshape(2, 2, 8, 6))
