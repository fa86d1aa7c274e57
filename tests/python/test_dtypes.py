"""Signed-integer and float data (issue 26 point 5) against numpy: .npy, raw and HDF5 files of int8/16/32,
float32 and float64 (read as float32, said so) load dense and answer every query: virtual images (exact int64 for
signed integers, float64 accumulation for floats), sum/mean/max patterns, CoM, frames, binning; NaN/inf are set to 0
and counted; the encoded representation refuses them with the reason. cpu here, cuda where a GPU is usable."""
import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda

DTYPES = ["|i1", "<i2", ">i2", "<i4", ">i4", "<f4", ">f4", "<f8", ">f8"]
SHAPE = (4, 5, 12, 10)


def values(dtype, shape=SHAPE, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "i":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, size=shape, endpoint=True)
    else:
        a = rng.normal(20.0, 50.0, size=shape) * (10.0 if dt.itemsize == 8 else 1.0)
    a[..., 4:8, 3:7] += 100 if dt.kind == "f" else 0  # a brighter disk for the floats
    return a.astype(dtype)


def loaded_dtype(dtype):
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt.kind == "f" else dt.newbyteorder("=")


def reference(a):
    """numpy's view of what qgpu holds: float64 data as float32."""
    return a.astype(loaded_dtype(a.dtype))


def sums_numpy(held, mask):
    acc = np.float64 if held.dtype.kind == "f" else np.int64
    return (held.astype(acc) * mask.astype(acc)).sum(axis=(-2, -1))


def check_queries(ds, a):
    held = reference(a)
    assert np.asarray(ds).dtype == held.dtype
    assert np.array_equal(np.asarray(ds), held)
    assert np.array_equal(ds[1, 2], held[1, 2])
    floats = held.dtype.kind == "f"
    mask = np.zeros(a.shape[-2:], np.uint8)
    mask[3:9, 2:8] = 1
    mask[5, 5] = 3
    got = qgpu.detector.virtual_image(ds, mask)
    want = sums_numpy(held, mask)
    assert got.dtype == (np.float64 if floats else np.int64)
    if floats:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
    else:
        assert np.array_equal(got, want)
    signed_mask = np.where(np.arange(np.prod(a.shape[-2:])).reshape(a.shape[-2:]) % 3 == 0, -2, 1).astype(np.int32)
    got = qgpu.detector.virtual_image(ds, signed_mask)
    want = sums_numpy(held, signed_mask)
    if floats:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
    else:
        assert np.array_equal(got, want)
    acc = np.float64 if floats else np.int64
    s = qgpu.detector.sum_pattern(ds)
    m = qgpu.detector.max_pattern(ds)
    if floats:
        np.testing.assert_allclose(s, held.astype(acc).sum(axis=(0, 1)), rtol=1e-12, atol=1e-9)
        assert np.array_equal(m, held.max(axis=(0, 1)).astype(np.float64))
    else:
        assert np.array_equal(s, held.astype(acc).sum(axis=(0, 1)))
        assert np.array_equal(m, held.max(axis=(0, 1)).astype(np.int64))
    np.testing.assert_allclose(qgpu.detector.mean_pattern(ds), held.astype(np.float64).mean(axis=(0, 1)),
                               rtol=1e-6, atol=1e-6)
    com_row, _ = qgpu.dpc.center_of_mass(ds)
    t = held.astype(acc).sum(axis=(-2, -1)).astype(np.float64)
    r = (held.astype(acc) * np.arange(a.shape[-2])[:, None]).sum(axis=(-2, -1)).astype(np.float64)
    ok = t != 0
    np.testing.assert_allclose(np.asarray(com_row).ravel()[ok.ravel()], (r / np.where(ok, t, 1))[ok], rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_npy_every_dtype_answers_every_query(tmp_path, dtype):
    a = values(dtype)
    path = tmp_path / "a.npy"
    np.save(path, a)
    info = qgpu.io.inspect(str(path))
    assert info["dtype"] == loaded_dtype(dtype).name
    assert info["stored_dtype"] == np.dtype(dtype).newbyteorder("=").name
    ds = qgpu.io.load(str(path), backend="cpu")
    assert ds.dtype == loaded_dtype(dtype).name and ds.representation == "dense"
    check_queries(ds, a)


@pytest.mark.parametrize("dtype", ["<i2", ">f8", "|i1"])
def test_raw_signed_and_float(tmp_path, dtype):
    a = values(dtype)
    path = tmp_path / "a.raw"
    with open(path, "wb") as f:
        f.write(b"\0" * 5)
        for frame in a.reshape(-1, *a.shape[-2:]):
            f.write(b"\1\2")
            f.write(frame.tobytes())
    name = {"<i2": "int16", ">f8": ">f8", "|i1": "int8"}[dtype]
    ds = qgpu.io.load(str(path), backend="cpu", format="raw", dtype=name, detector_shape=a.shape[-2:], offset=5,
                      frame_header=2, scan_shape=a.shape[:2])
    check_queries(ds, a)


def test_hdf5_signed_and_float(tmp_path):
    h5py = pytest.importorskip("h5py")
    for dtype in ["<i2", ">i4", "<f4", ">f8"]:
        a = values(dtype, seed=3)
        path = tmp_path / f"a{dtype[1:]}.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("/entry/data/data", data=a, chunks=(1, 1) + a.shape[-2:])
        ds = qgpu.io.load(str(path), backend="cpu")
        assert ds.dtype == loaded_dtype(dtype).name
        check_queries(ds, a)


def test_binning_sums_in_the_widened_dtype(tmp_path):
    for dtype, want in [("<i2", np.int32), ("<f8", np.float32), ("|i1", np.int32)]:
        a = values(dtype)
        path = tmp_path / "b.npy"
        np.save(path, a)
        ds = qgpu.io.load(str(path), backend="cpu", bin_detector=2)
        held = reference(a).astype(np.float64 if want == np.float32 else np.int64)
        binned = held.reshape(4, 5, 6, 2, 5, 2).sum(axis=(3, 5))
        got = np.asarray(ds)
        assert got.dtype == want
        if want == np.float32:
            np.testing.assert_allclose(got, binned, rtol=1e-6)
        else:
            assert np.array_equal(got, binned)
    big = np.full((2, 2, 4, 4), 2**31 - 1, np.int32)
    np.save(tmp_path / "big.npy", big)
    with pytest.raises(qgpu.FormatError, match="overflow int32"):
        qgpu.io.load(str(tmp_path / "big.npy"), backend="cpu", bin_detector=2)


def test_nonfinite_values_are_zeroed_and_counted(tmp_path):
    a = values("<f4")
    a[0, 0, 0, 0] = np.nan
    a[1, 2, 3, 4] = np.inf
    a[3, 4, 5, 6] = -np.inf
    path = tmp_path / "nan.npy"
    np.save(path, a)
    ds = qgpu.io.load(str(path), backend="cpu")
    assert ds.provenance["parameters"]["nonfinite_values"] == 3
    assert any("3 NaN/inf values" in w for w in ds.metadata["file"]["warnings"])
    clean = np.where(np.isfinite(a), a, 0).astype(np.float32)
    assert np.array_equal(np.asarray(ds), clean)
    bf = qgpu.detector.virtual_image(ds, np.ones(a.shape[-2:], bool))
    assert np.all(np.isfinite(bf))


def test_encoded_refuses_signed_and_float_with_the_reason(tmp_path):
    a = values("<i2")
    path = tmp_path / "s.npy"
    np.save(path, a)
    with pytest.raises(qgpu.InvalidArgument, match="encoded representation holds unsigned counts.*int16"):
        qgpu.io.load(str(path), backend="cpu", representation="encoded")
    assert qgpu.io.load(str(path), backend="cpu").representation == "dense"  # auto: dense
    with pytest.raises(qgpu.InvalidArgument, match="unsigned counts"):
        qgpu.io.load(str(path), backend="cpu", admission_fraction=1e-12)  # too big dense: the error says why


@requires_cuda
@pytest.mark.parametrize("dtype", ["|i1", ">i2", "<i4", "<f4", ">f8"])
def test_cuda_equals_numpy(tmp_path, dtype):
    a = values(dtype, shape=(6, 8, 32, 32), seed=5)
    a.flat[7] = np.nan if a.dtype.kind == "f" else a.flat[7]
    path = tmp_path / "a.npy"
    np.save(path, a)
    gpu = qgpu.io.load(str(path), backend="cuda")
    cpu = qgpu.io.load(str(path), backend="cpu")
    assert np.array_equal(np.asarray(gpu), np.asarray(cpu))
    assert gpu.provenance["parameters"].get("nonfinite_values") == cpu.provenance["parameters"].get("nonfinite_values")
    mask = np.zeros((32, 32), np.uint8)
    mask[8:24, 8:24] = 1
    for fn in (lambda d: qgpu.detector.virtual_image(d, mask), qgpu.detector.sum_pattern, qgpu.detector.max_pattern):
        g, c = fn(gpu), fn(cpu)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-9)
        else:
            assert np.array_equal(g, c)
    if a.dtype.kind == "i":  # binned sums (int32) out of range: both backends refuse, naming it
        sums = a.astype(np.int64).reshape(3, 2, 4, 2, 16, 2, 16, 2).sum(axis=(1, 3, 5, 7))
        if sums.min() < np.iinfo(np.int32).min or sums.max() > np.iinfo(np.int32).max:
            for backend in ("cuda", "cpu"):
                with pytest.raises(qgpu.FormatError, match="overflow int32"):
                    qgpu.io.load(str(path), backend=backend, bin_scan=2, bin_detector=2)
            return
    binned_g = np.asarray(qgpu.io.load(str(path), backend="cuda", bin_scan=2, bin_detector=2))
    binned_c = np.asarray(qgpu.io.load(str(path), backend="cpu", bin_scan=2, bin_detector=2))
    if a.dtype.kind == "f":
        np.testing.assert_allclose(binned_g, binned_c, rtol=1e-6)
    else:
        assert np.array_equal(binned_g, binned_c)


def test_cli_info_and_image_on_float64_and_int16(tmp_path):
    import os
    import subprocess
    qgpu_bin = os.environ["QGPU_BIN"]
    a = values(">f8", shape=(4, 4, 16, 16), seed=8)
    path = tmp_path / "f8.npy"
    np.save(path, a)
    info = subprocess.run([qgpu_bin, "info", str(path)], check=True, capture_output=True, text=True).stdout
    assert "float64 big-endian" in info and "(loads as float32)" in info
    i2 = values("<i2", shape=(4, 4, 16, 16), seed=9)
    np.save(tmp_path / "i2.npy", i2)
    for src, arr in [(path, a), (tmp_path / "i2.npy", i2)]:
        out = tmp_path / ("out_" + src.stem)
        subprocess.run([qgpu_bin, "image", str(src), "--backend", "cpu", "--bf", "--center", "7.5", "7.5",
                        "--radius", "4", "-o", str(out)], check=True, capture_output=True, text=True)
        bf = np.load(out / "bf.npy")
        rr, cc = np.mgrid[:16, :16]
        mask = ((rr - 7.5) ** 2 + (cc - 7.5) ** 2 <= 16).astype(np.uint8)
        want = sums_numpy(reference(arr), mask)
        assert bf.dtype == want.dtype
        if bf.dtype.kind == "f":
            np.testing.assert_allclose(bf, want, rtol=1e-12)
        else:
            assert np.array_equal(bf, want)
        assert (out / "bf.png").stat().st_size > 0


@pytest.mark.parametrize("dtype", [">i2", "<f4"])
def test_fortran_order_signed_and_float(tmp_path, dtype):
    a = values(dtype)
    path = tmp_path / "f.npy"
    np.save(path, np.asfortranarray(a))
    ds = qgpu.io.load(str(path), backend="cpu")
    check_queries(ds, a)
    f8 = tmp_path / "f8.npy"
    np.save(f8, np.asfortranarray(values("<f8")))
    with pytest.raises(qgpu.DTypeError, match="Fortran-order float64"):
        qgpu.io.load(str(f8), backend="cpu")
