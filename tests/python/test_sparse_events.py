"""Sparse electron counts loaded dense: stempy HDF5 (electron_events/frames vlen uint32 pixel indices, scan_positions,
frame and scan shape attributes, versions 1-3, several frames per position summed) and LiberTEM raw CSR (TOML +
indptr / indices / values), written here with h5py / numpy after stempy's sparse_array.py and LiberTEM's raw_csr.py;
the loads equal the dense reading done in numpy (np.add.at of every event), and every query (sum pattern, virtual
image, CoM, read) equals the same query on that dense array loaded from a .npy; regions, bins, the encoded
representation; malformed fields are named; `qgpu sample --format stempy|csr` writes fixtures whose load equals
the sample's."""
import os
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda

h5py = pytest.importorskip("h5py")


def events(scan=(4, 5), det=(12, 10), fpp=2, seed=0, rate=0.08):
    """Per position a list of fpp frames, each an array of flat pixel indices (duplicates across frames)."""
    rng = np.random.default_rng(seed)
    n = scan[0] * scan[1]
    out = []
    for _ in range(n):
        frames = []
        for _ in range(fpp):
            hit = np.flatnonzero(rng.random(det[0] * det[1]) < rate).astype(np.uint32)
            frames.append(hit)
        out.append(frames)
    return out


def dense_of(ev, scan, det, dtype=np.uint32):
    d = np.zeros((scan[0] * scan[1], det[0] * det[1]), np.uint64)
    for p, frames in enumerate(ev):
        for fr in frames:
            np.add.at(d[p], fr.astype(np.int64), 1)
    return d.reshape(scan + det).astype(dtype)


def write_stempy(path, ev, scan, det, version=3, positions=None, frame_attrs=None, scan_attrs=None):
    """stempy SparseArray.write_to_hdf5: frames flattened (positions x frames per position) for version 3;
    before, one row per stored frame with scan_positions naming its position."""
    vl = h5py.vlen_dtype(np.uint32)
    if version >= 3:
        flat = [fr for frames in ev for fr in frames]
        pos = np.arange(len(ev), dtype=np.uint32)
    else:
        flat, pos = [], []
        for p, frames in enumerate(ev):
            for fr in frames:
                flat.append(fr)
                pos.append(p)
        pos = np.array(pos if positions is None else positions, dtype=np.uint32)
    with h5py.File(path, "w") as f:
        f.attrs["version"] = version
        g = f.create_group("electron_events")
        s = g.create_dataset("scan_positions", data=pos)
        for k, v in (scan_attrs or {"Nx": scan[1], "Ny": scan[0]}).items():
            s.attrs[k] = v
        d = g.create_dataset("frames", (len(flat),), dtype=vl)
        for k, v in (frame_attrs or {"Nx": det[0], "Ny": det[1]}).items():
            d.attrs[k] = v
        for i, fr in enumerate(flat):
            d[i] = fr


def same_queries(ds, ref):
    """Every query on ds equals the same query on the dense reference loaded from a .npy."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        p = os.path.join(t, "ref.npy")
        np.save(p, ref)
        rd = qgpu.io.load(p, backend="cpu")
        assert np.array_equal(np.asarray(ds), np.asarray(rd))
        assert np.array_equal(np.asarray(qgpu.detector.sum_pattern(ds)), np.asarray(qgpu.detector.sum_pattern(rd)))
        mask = np.zeros(ref.shape[2:], bool)
        mask[2:7, 3:8] = True
        assert np.array_equal(qgpu.detector.virtual_image(ds, mask), qgpu.detector.virtual_image(rd, mask))


@pytest.mark.parametrize("version", [3, 2])
def test_stempy_loads_as_the_dense_reading(tmp_path, version):
    scan, det = (4, 5), (12, 10)
    ev = events(scan, det, fpp=3, seed=version)
    p = tmp_path / "s.h5"
    write_stempy(p, ev, scan, det, version=version)
    info = qgpu.io.inspect(str(p))
    assert info["reader"] == "stempy" and info["codec"] == "electron events (stempy)"
    assert info["shape"] == [4, 5, 12, 10] and info["scan_shape_source"] == "stempy scan_positions Ny x Nx"
    assert info["dtype"] == "uint8"  # at most 3 electrons on a pixel of a position
    ds = qgpu.io.load(str(p), backend="cpu")
    ref = dense_of(ev, scan, det, np.uint8)
    assert np.asarray(ds).dtype == np.uint8
    same_queries(ds, ref)
    assert ds.metadata["missing"] == 0
    assert ds.provenance["parameters"]["format"] == "stempy"


def test_stempy_non_square_frame_attributes_follow_stempy(tmp_path):
    """stempy writes frames.attrs Nx = frame_shape[0] (rows), Ny = frame_shape[1]: a 12 x 10 frame."""
    scan, det = (3, 2), (12, 10)
    ev = events(scan, det, fpp=1, seed=4)
    p = tmp_path / "r.h5"
    write_stempy(p, ev, scan, det)
    assert np.array_equal(np.asarray(qgpu.io.load(str(p), backend="cpu")), dense_of(ev, scan, det, np.uint8))


def test_stempy_version1_duplicates_in_a_frame_and_missing_positions(tmp_path):
    scan, det = (3, 4), (8, 8)
    ev = events(scan, det, fpp=1, seed=5, rate=0.2)
    ev[1] = [np.array([3, 3, 3, 9], np.uint32)]  # version 1: one index several times in a frame
    # position 7 never scanned: leave it out of the stored frames
    kept = [(p, fr) for p, frames in enumerate(ev) for fr in frames if p != 7]
    vl = h5py.vlen_dtype(np.uint32)
    p = tmp_path / "v1.h5"
    with h5py.File(p, "w") as f:  # no version attribute: version 1
        g = f.create_group("electron_events")
        s = g.create_dataset("scan_positions", data=np.array([k for k, _ in kept], np.uint16))
        s.attrs["Nx"], s.attrs["Ny"] = scan[1], scan[0]
        d = g.create_dataset("frames", (len(kept),), dtype=vl)
        d.attrs["Nx"], d.attrs["Ny"] = det
        for i, (_, fr) in enumerate(kept):
            d[i] = fr
    info = qgpu.io.inspect(str(p))
    assert info["dtype"] == "uint32" and info["metadata"]["positions_never_scanned"] == 1
    ds = qgpu.io.load(str(p), backend="cpu")
    ev[7] = []
    ref = dense_of(ev, scan, det, np.uint32)
    assert ref[0, 1, 0, 3] >= 3
    same_queries(ds, ref)
    assert ds.metadata["missing"] == 1 and ds.metadata["missing_positions"] == [7]


def test_stempy_regions_bins_and_encoded(tmp_path):
    scan, det = (4, 6), (12, 10)
    ev = events(scan, det, fpp=2, seed=6)
    p = tmp_path / "b.h5"
    write_stempy(p, ev, scan, det)
    ref = dense_of(ev, scan, det, np.uint32)
    out = np.asarray(qgpu.io.load(str(p), backend="cpu", scan_region=(1, 2, 2, 4), detector_region=(2, 0, 8, 10)))
    assert np.array_equal(out, ref[1:3, 2:6, 2:10, 0:10])
    b = np.asarray(qgpu.io.load(str(p), backend="cpu", bin_scan=2, bin_detector=2))
    want = ref.reshape(2, 2, 3, 2, 6, 2, 5, 2).sum(axis=(1, 3, 5, 7))
    assert np.array_equal(b, want)
    enc = qgpu.io.load(str(p), backend="cpu", representation="encoded")
    assert enc.representation == "encoded"
    assert np.array_equal(np.asarray(enc), ref.astype(np.uint8))


@pytest.mark.parametrize("kw,message", [
    (dict(frame_attrs={"Nx": 12}), "frames has no attribute Ny"),
    (dict(frame_attrs={"Nx": 12, "Ny": 0}), "attribute Ny is 0; it must be a positive size"),
    (dict(scan_attrs={"Nx": 5}), "scan_positions has no attribute Ny"),
    (dict(scan_attrs={"Nx": 7, "Ny": 4}), "not a whole number of frames for each of the 4 x 7 scan positions"),
    (dict(version=2, positions=[0] * 59 + [99]), r"scan_positions\[59\] = 99 is outside the 4 x 5 scan"),
    (dict(version=5), "version is 5; read are stempy sparse versions 1, 2 and 3"),
])
def test_stempy_malformed_fields_are_named(tmp_path, kw, message):
    scan, det = (4, 5), (12, 10)
    p = tmp_path / "bad.h5"
    write_stempy(p, events(scan, det, fpp=3), scan, det, **kw)
    with pytest.raises(qgpu.FormatError, match=message):
        qgpu.io.inspect(str(p))


def test_stempy_pixel_index_outside_the_frame(tmp_path):
    scan, det = (2, 2), (4, 4)
    ev = [[np.array([1, 2], np.uint32)] for _ in range(4)]
    ev[3] = [np.array([1, 16], np.uint32)]
    p = tmp_path / "o.h5"
    write_stempy(p, ev, scan, det)
    with pytest.raises(qgpu.FormatError, match="frame 3 holds pixel index 16, outside the 4 x 4 frame"):
        qgpu.io.load(str(p), backend="cpu")


def test_stempy_frames_not_vlen(tmp_path):
    p = tmp_path / "n.h5"
    with h5py.File(p, "w") as f:
        g = f.create_group("electron_events")
        g.create_dataset("frames", data=np.zeros((4, 3), np.uint32))
        g.create_dataset("scan_positions", data=np.arange(4))
    with pytest.raises(qgpu.FormatError, match="frames is not variable-length"):
        qgpu.io.inspect(str(p))


def write_csr(tmp_path, dense, ip="<i8", ix="<i4", dv="<u2", toml=None, name="c"):
    """LiberTEM raw_csr: nav and sig flattened, scipy-compatible CSR in three raw files."""
    nav, sig = dense.shape[:2], dense.shape[2:]
    m = dense.reshape(nav[0] * nav[1], sig[0] * sig[1])
    rows, cols = np.nonzero(m)
    indptr = np.zeros(m.shape[0] + 1, np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    indptr.astype(ip).tofile(tmp_path / f"{name}_indptr.raw")
    cols.astype(ix).tofile(tmp_path / f"{name}_indices.raw")
    m[rows, cols].astype(dv).tofile(tmp_path / f"{name}_values.raw")
    text = toml or (f'# LiberTEM raw CSR\n[params]\nfiletype = "raw_csr"\nnav_shape = [{nav[0]}, {nav[1]}]\n'
                    f'sig_shape = [{sig[0]}, {sig[1]}]\n\n[raw_csr]\nindptr_file = "{name}_indptr.raw"\n'
                    f'indptr_dtype = "{ip}"\nindices_file = "{name}_indices.raw"\nindices_dtype = "{ix}"\n'
                    f'data_file = "{name}_values.raw"\ndata_dtype = "{dv}"\n')
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("ip,ix,dv", [("<i8", "<i4", "<u2"), ("<u4", "<u8", "<u1"), (">i4", ">u4", ">i2"),
                                      ("<i8", "<i4", "<f4")])
def test_csr_loads_as_the_dense_reading(tmp_path, ip, ix, dv):
    rng = np.random.default_rng(1)
    dense = (rng.random((3, 4, 10, 9)) < 0.1) * rng.integers(1, 100, (3, 4, 10, 9))
    if np.dtype(dv).kind == "f":
        dense = dense * np.float32(0.5) - 0.0
    dense = dense.astype(np.dtype(dv).newbyteorder("="))
    p = write_csr(tmp_path, dense, ip, ix, dv)
    info = qgpu.io.inspect(str(p))
    assert info["reader"] == "libertem_csr" and info["shape"] == [3, 4, 10, 9]
    assert info["metadata"]["nnz"] == int(np.count_nonzero(dense))
    ds = qgpu.io.load(str(p), backend="cpu")
    same_queries(ds, dense)
    sub = np.asarray(qgpu.io.load(str(p), backend="cpu", scan_region=(1, 1, 2, 2), detector_region=(1, 2, 5, 6)))
    assert np.array_equal(sub, dense[1:3, 1:3, 1:6, 2:8])


@pytest.mark.parametrize("change,message", [
    (lambda t: t.replace('filetype = "raw_csr"', 'filetype = "raw"'), "filetype is 'raw', not 'raw_csr'"),
    (lambda t: t.replace("nav_shape = [3, 4]", "nav_shape = [12]"), "nav_shape is not two positive integers"),
    (lambda t: t.replace("nav_shape = [3, 4]", "nav_shape = [4, 4]"), "holds 13 offsets .12 rows. but"),
    (lambda t: t.replace('indices_dtype = "<i4"', 'indices_dtype = "<f4"'), "indices_dtype is '<f4'"),
    (lambda t: t.replace('data_dtype = "<u2"', 'data_dtype = "<u4"'), "data file .* has 2 bytes per value|bytes;"),
    (lambda t: t.replace('sig_shape = [10, 9]', 'sig_shape = [10, 9'), "does not end on its line"),
    (lambda t: t.replace('indptr_file = "c_indptr.raw"', 'indptr_file = 5'), "indptr_file is not a file name"),
    (lambda t: t.replace('[raw_csr]', '[other]'), "has no \\[raw_csr\\] table"),
])
def test_csr_malformed_descriptor_fields_are_named(tmp_path, change, message):
    rng = np.random.default_rng(2)
    dense = ((rng.random((3, 4, 10, 9)) < 0.1) * 7).astype(np.uint16)
    p = write_csr(tmp_path, dense)
    p.write_text(change(p.read_text()))
    with pytest.raises((qgpu.FormatError, qgpu.IoError), match=message):
        qgpu.io.inspect(str(p), format="libertem_csr")


def test_csr_bad_index_and_indptr(tmp_path):
    dense = np.zeros((2, 2, 4, 4), np.uint16)
    dense[0, 1, 2, 3] = 5
    dense[1, 1, 0, 0] = 2
    p = write_csr(tmp_path, dense)
    np.array([0, 0, 16], np.int32).tofile(tmp_path / "c_indices.raw")
    np.array([0, 0, 1, 3, 3][:5], np.int64).tofile(tmp_path / "c_indptr.raw")
    np.array([5, 2, 1], np.uint16).tofile(tmp_path / "c_values.raw")
    with pytest.raises(qgpu.FormatError, match=r"indices .*\[2\] \(row 2\) = 16 is outside the 16 detector pixels"):
        qgpu.io.load(str(p), backend="cpu")
    np.array([0, 2, 1, 3, 3], np.int64).tofile(tmp_path / "c_indptr.raw")
    with pytest.raises(qgpu.FormatError, match="decreases"):
        qgpu.io.load(str(p), backend="cpu")


@pytest.mark.parametrize("fmt", ["stempy", "csr"])
def test_sample_writes_sparse_fixtures_equal_to_the_sample(tmp_path, fmt):
    exe = os.environ.get("QGPU_BIN")
    if not exe:
        pytest.skip("QGPU_BIN not set")
    common = ["--scan", "4", "5", "--detector", "16", "16", "--dtype", "uint8", "--seed", "3"]
    subprocess.run([exe, "sample", str(tmp_path / "ref.npy"), "--format", "npy", *common], check=True,
                   capture_output=True)
    out = tmp_path / ("s.h5" if fmt == "stempy" else "s.toml")
    subprocess.run([exe, "sample", str(out), "--format", fmt, *common], check=True, capture_output=True)
    ref = np.load(tmp_path / "ref.npy").reshape(4, 5, 16, 16)
    got = np.asarray(qgpu.io.load(str(out), backend="cpu"))
    assert np.array_equal(got.astype(np.uint64), ref.astype(np.uint64))


def test_sample_writes_emd(tmp_path):
    exe = os.environ.get("QGPU_BIN")
    if not exe:
        pytest.skip("QGPU_BIN not set")
    common = ["--scan", "4", "5", "--detector", "16", "16", "--seed", "3"]
    subprocess.run([exe, "sample", str(tmp_path / "ref.npy"), "--format", "npy", *common], check=True,
                   capture_output=True)
    subprocess.run([exe, "sample", str(tmp_path / "s.emd"), "--format", "emd", *common], check=True,
                   capture_output=True)
    ref = np.load(tmp_path / "ref.npy").reshape(4, 5, 16, 16)
    info = qgpu.io.inspect(str(tmp_path / "s.emd"))
    assert info["metadata"]["layout"] == "py4DSTEM EMD 1.0" and info["calibration"]["scan_step_angstrom"] > 0
    assert np.array_equal(np.asarray(qgpu.io.load(str(tmp_path / "s.emd"), backend="cpu")), ref)


@requires_cuda
def test_sparse_loads_on_cuda_equal_the_dense_reading(tmp_path):
    scan, det = (4, 5), (12, 10)
    ev = events(scan, det, fpp=3, seed=9)
    p = tmp_path / "s.h5"
    write_stempy(p, ev, scan, det)
    ref = dense_of(ev, scan, det, np.uint8)
    ds = qgpu.io.load(str(p), backend="cuda")
    assert np.array_equal(np.asarray(ds), ref)
    mask = np.zeros(det, bool)
    mask[2:7, 3:8] = True
    assert np.array_equal(qgpu.detector.virtual_image(ds, mask), ref[..., 2:7, 3:8].sum(axis=(-2, -1)))
    enc = qgpu.io.load(str(p), backend="cuda", representation="encoded")
    assert np.array_equal(np.asarray(enc), ref)
    dense = ((np.random.default_rng(3).random((3, 4, 10, 9)) < 0.1) * 9).astype(np.uint16)
    c = write_csr(tmp_path, dense)
    assert np.array_equal(np.asarray(qgpu.io.load(str(c), backend="cuda")), dense)


@pytest.mark.parametrize("to", ["h5", "emd"])
def test_sparse_converts_to_the_dense_formats_exactly(tmp_path, to):
    scan, det = (4, 5), (12, 10)
    ev = events(scan, det, fpp=2, seed=11)
    p = tmp_path / "s.h5"
    write_stempy(p, ev, scan, det)
    out = tmp_path / f"out.{to}"
    qgpu.io.convert(str(p), str(out), to=to, backend="cpu")
    assert np.array_equal(np.asarray(qgpu.io.load(str(out), backend="cpu")), dense_of(ev, scan, det, np.uint8))


def test_damaged_stempy_files_are_errors_never_crashes(tmp_path):
    """Byte mutations of a stempy file: HDF5 1.10 segfaults reading some damaged global heaps (the vlen events);
    inspect and the load's reads run first in a child process, so each ends in a result or a qgpu error."""
    scan, det = (4, 5), (12, 10)
    src = tmp_path / "c.h5"
    write_stempy(src, events(scan, det), scan, det)
    good = src.read_bytes()
    rng = np.random.default_rng(1)
    crashed = 0
    for k in range(60):
        m = bytearray(good)
        for _ in range(int(rng.integers(1, 8))):
            m[int(rng.integers(0, len(m)))] = int(rng.integers(0, 256))
        p = tmp_path / f"m{k}.h5"
        p.write_bytes(bytes(m))
        try:
            qgpu.io.load(str(p), backend="cpu")
        except (qgpu.FormatError, qgpu.IoError, qgpu.DTypeError, qgpu.InvalidArgument) as e:
            crashed += "HDF5 library crashed" in str(e)
    assert crashed >= 0  # reaching here is the point: no mutant took the process down
