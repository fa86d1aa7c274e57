"""qgpu convert / quantem.gpu.io.convert: every readable source (npy, Merlin, MRC, EMPAD, HDF5; uint8/16/32, int16,
float32), with regions, bins and pixel masks, written as a DECTRIS-style bitshuffle+LZ4 HDF5 file (or .npy): the
load of the output equals the load of the source bit for bit, through our decoder and through the HDF5 plugin
(decoder="hdf5"); h5py reads the file (layout, filter cd_values, chunks, attributes, counts)."""
import json
import os
import stat
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu


def counts(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.poisson(3.0, size=shape)
    a[..., shape[-2] // 2 - 2:shape[-2] // 2 + 2, shape[-1] // 2 - 2:shape[-1] // 2 + 2] += 100
    a = a.astype(dtype)
    if np.dtype(dtype).kind in "ui" and np.dtype(dtype).itemsize >= 2:
        a.flat[0] = np.iinfo(dtype).max  # every bit plane used
    if np.dtype(dtype).kind == "i":
        a.flat[1] = np.iinfo(dtype).min
    if np.dtype(dtype).kind == "f":
        a = a * np.float32(0.37) - np.float32(1.5)  # negative and fractional values
        a.flat[2] = np.float32(3.4e38)
    return a


def loaded(path, **kw):
    return np.asarray(qgpu.io.load(str(path), backend="cpu", **kw))


def assert_round_trip(src, out, expect_dtype=None, **load_kw):
    ref = loaded(src, **load_kw)
    r = qgpu.io.convert(str(src), str(out), backend="cpu", **load_kw)
    assert r["path"] == str(out) and tuple(r["shape"]) == ref.shape and r["dtype"] == str(ref.dtype)
    assert r["dense_bytes"] == ref.nbytes and 0 < r["file_bytes"] == os.path.getsize(out)
    info = qgpu.io.inspect(str(out))
    assert info["reader"] == "hdf5" and info["one_frame_per_chunk"] and info["bitshuffle_lz4"] and info["ready"]
    assert info["scan_shape_source"] == "attribute scan_shape"
    ds = qgpu.io.load(str(out), backend="cpu")
    assert ds.provenance["parameters"]["chunk_index"] == "parsed: fixed array"  # HDF5 1.10 format, O(1) inserts
    for decoder in ("quantem", "hdf5"):
        back = loaded(out, decoder=decoder)
        assert back.dtype == ref.dtype and back.shape == ref.shape
        assert np.array_equal(back.view(np.uint8), ref.view(np.uint8)), decoder  # bit for bit (floats too)
    if expect_dtype:
        assert str(ref.dtype) == expect_dtype
    return ref, r


@pytest.mark.parametrize("dtype", ["|u1", "<u2", ">u2", "<u4", ">i2", "<i4", "<f4", ">f4"])
def test_npy_every_dtype_round_trips_exactly(tmp_path, dtype):
    a = counts((5, 6, 12, 10), dtype, seed=1)
    src = tmp_path / "a.npy"
    np.save(src, a)
    ref, _ = assert_round_trip(src, tmp_path / "a.h5")
    assert np.array_equal(ref, a)


def test_regions_bins_and_calibration_follow(tmp_path, sample_path):
    out = tmp_path / "cut.h5"
    kw = dict(scan_region=(2, 1, 8, 8), detector_region=(4, 6, 40, 36), bin_scan=2, bin_detector=2)
    ref, r = assert_round_trip(sample_path, out, **kw)
    assert ref.shape == (4, 4, 20, 18) and ref.dtype == np.uint32  # binned sums
    src = qgpu.io.inspect(sample_path)["calibration"]
    cal = qgpu.io.inspect(str(out))["calibration"]
    assert cal["scan_step_angstrom"] == pytest.approx(2 * src["scan_step_angstrom"], rel=1e-15)
    assert cal["detector_mrad_per_pixel"] == pytest.approx(2 * src["detector_mrad_per_pixel"], rel=1e-15)
    assert cal["disk_radius_px"] == pytest.approx(src["disk_radius_px"] / 2, rel=1e-15)
    assert cal["energy_kev"] == src["energy_kev"] and cal == r["calibration"]
    prov = r["provenance"]
    assert prov["operation"] == "io.convert" and prov["load"]["parameters"]["bin_detector"] == 2
    assert prov["load"]["parameters"]["detector_region"] == [4, 6, 40, 36]
    # An encoded load is read back band by band like a dense one.
    enc, _ = assert_round_trip(sample_path, tmp_path / "enc.h5", representation="encoded", scan_region=(0, 0, 9, 10))
    assert np.array_equal(enc, loaded(sample_path)[:9])
    # Unbinned, uncut: the calibration is carried unchanged.
    _, r2 = assert_round_trip(sample_path, tmp_path / "whole.h5")
    assert r2["calibration"] == src


def test_pixel_mask_carried_and_zeroed(tmp_path):
    master = tmp_path / "acq_master.h5"
    qgpu.io.write_sample(str(master), scan=(4, 5), detector=(24, 24), dtype="uint16", files=2, seed=2)
    keep_ref, _ = assert_round_trip(master, tmp_path / "keep.h5")
    zero_ref, _ = assert_round_trip(master, tmp_path / "zero.h5", pixel_mask="zero")
    bad_src = qgpu.io.inspect(str(master))["pixel_mask"]["bad_pixels"]
    assert bad_src == 5 and qgpu.io.inspect(str(tmp_path / "keep.h5"))["pixel_mask"]["bad_pixels"] == 5
    # The zeroed output holds zeros where the mask is, and still names the pixels.
    differs = (keep_ref != zero_ref).any(axis=(0, 1))
    assert 0 < differs.sum() <= 5 and (zero_ref[..., differs] == 0).all()
    # Cut and binned: the mask follows (a binned pixel is bad when any of its pixels is).
    ref, _ = assert_round_trip(master, tmp_path / "bin.h5", detector_region=(2, 2, 22, 22), bin_detector=2)
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "bin.h5", "r") as f:
        mask = f["/entry/instrument/detector/detectorSpecific/pixel_mask"][()]
    with h5py.File(master, "r") as f:
        full = f["/entry/instrument/detector/detectorSpecific/pixel_mask"][()] > 0
    expect = full[2:24, 2:24].reshape(11, 2, 11, 2).any(axis=(1, 3))
    assert mask.shape == (11, 11) and np.array_equal(mask > 0, expect)


def test_h5py_reads_the_file(tmp_path, h5py_path):
    h5py = pytest.importorskip("h5py")
    a = counts((3, 4, 20, 18), "<u2", seed=4)
    src = tmp_path / "a.npy"
    np.save(src, a)
    out = tmp_path / "a.h5"
    qgpu.io.convert(str(src), str(out), backend="cpu")
    with h5py.File(out, "r") as f:
        ds = f["/entry/data/data"]
        assert ds.shape == (12, 20, 18) and ds.chunks == (1, 20, 18) and ds.dtype == np.dtype("<u2")
        plist = ds.id.get_create_plist()
        assert plist.get_nfilters() == 1
        fid, flags, cd, name = plist.get_filter(0)
        assert fid == 32008 and tuple(cd)[2:] == (2, 0, 2)  # element size 2, default block, LZ4
        assert list(ds.attrs["scan_shape"]) == [3, 4]
        assert np.array_equal(ds[()].reshape(a.shape), a)  # through the plugin
        assert json.loads(f["/entry/provenance"][()])["operation"] == "io.convert"
        # One direct chunk = the plugin's framing: 12-byte header, decoded size = one frame.
        _, raw = ds.id.read_direct_chunk((5, 0, 0))
        assert int.from_bytes(raw[:8], "big") == 20 * 18 * 2 and int.from_bytes(raw[8:12], "big") == 4096 * 2
    f32 = tmp_path / "f.npy"
    np.save(f32, counts((2, 3, 8, 8), "<f4", seed=6))
    qgpu.io.convert(str(f32), str(tmp_path / "f.h5"), backend="cpu")
    with h5py.File(tmp_path / "f.h5", "r") as f:
        assert f["/entry/data/data"].dtype == np.dtype("<f4")
        assert tuple(f["/entry/data/data"].id.get_create_plist().get_filter(0)[2])[2] == 4
        assert np.array_equal(f["/entry/data/data"][()].reshape(2, 3, 8, 8), np.load(f32))


def run_qgpu(*args, check=True):
    return subprocess.run([os.environ["QGPU_BIN"], *map(str, args)], check=check, capture_output=True, text=True)


@pytest.mark.parametrize("form", [["--counter-depth", "6"], ["--counter-depth", "12", "--quad"],
                                  ["--counter-depth", "24"]])
def test_merlin_converts_exactly(tmp_path, form):
    mib = tmp_path / "scan.mib"
    run_qgpu("sample", mib, "--format", "mib", "--scan", "3", "4", "--detector", "32", "32", *form)
    assert_round_trip(mib, tmp_path / "m.h5")
    assert_round_trip(mib, tmp_path / "m2.h5", scan_region=(1, 1, 2, 3), bin_detector=4)


def test_mrc_and_empad_convert_exactly(tmp_path):
    mrc = tmp_path / "s.mrc"
    run_qgpu("sample", mrc, "--format", "mrc", "--scan", "4", "4", "--detector", "16", "16", "--dtype", "int16")
    assert_round_trip(mrc, tmp_path / "mrc.h5", expect_dtype="int16")
    xml = tmp_path / "e.xml"
    run_qgpu("sample", xml, "--format", "empad", "--scan", "3", "5", "--nan", "4")
    ref, r = assert_round_trip(xml, tmp_path / "empad.h5", expect_dtype="float32")
    # NaN were zeroed by the load (counted): the output holds those zeros.
    assert r["provenance"]["load"]["parameters"]["nonfinite_values"] == 4 and np.isfinite(ref).all()


def test_cli_convert_and_npy(tmp_path, sample_path):
    out = tmp_path / "c.h5"
    p = run_qgpu("convert", sample_path, out, "--backend", "cpu", "--bin-detector", "2", "--threads", "2")
    assert "wrote" in p.stdout and out.exists()
    assert np.array_equal(loaded(out), loaded(sample_path, bin_detector=2))
    npy = tmp_path / "c.npy"
    run_qgpu("convert", sample_path, npy, "--backend", "cpu", "--to", "npy", "--scan-region", "1", "2", "5", "4")
    ref = loaded(sample_path, scan_region=(1, 2, 5, 4))
    assert np.array_equal(np.load(npy), ref) and np.load(npy).dtype == ref.dtype
    side = json.loads((tmp_path / "c.json").read_text())
    assert side["shape"] == list(ref.shape) and side["dtype"] == "uint16"
    assert side["calibration"] == qgpu.io.inspect(sample_path)["calibration"]
    # Errors: a bad --to exits 1; a folder, a FIFO or the input itself is never written over.
    assert run_qgpu("convert", sample_path, out, "--to", "tiff", check=False).returncode == 1
    d = tmp_path / "dir.h5"
    d.mkdir()
    p = run_qgpu("convert", sample_path, d, "--backend", "cpu", check=False)
    assert p.returncode == 1 and "directory" in p.stderr
    fifo = tmp_path / "fifo.h5"
    os.mkfifo(fifo)
    p = run_qgpu("convert", sample_path, fifo, "--backend", "cpu", check=False)
    assert p.returncode == 1 and "FIFO" in p.stderr and stat.S_ISFIFO(os.stat(fifo).st_mode)
    p = run_qgpu("convert", out, out, "--backend", "cpu", check=False)
    assert p.returncode == 1 and "over its input" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir() if ".tmp-" in x.name) == []


def test_convert_errors_in_python(tmp_path, sample_path):
    with pytest.raises(qgpu.InvalidArgument, match="h5, npy or emd"):
        qgpu.io.convert(sample_path, str(tmp_path / "x.h5"), to="tiff", backend="cpu")
    with pytest.raises(qgpu.RegionError):
        qgpu.io.convert(sample_path, str(tmp_path / "x.h5"), backend="cpu", scan_region=(0, 0, 99, 99))
    assert not (tmp_path / "x.h5").exists()
