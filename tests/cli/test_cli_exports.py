"""qgpu image / ssb --save tiff,emd: each product also as NAME.tif (32-bit float, ImageJ description with the unit,
X/YResolution = pixels per unit) equal to NAME.npy, and OUT/products.emd (EMD 1.0: one Array per product with its
dim vectors and the root's Calibration) read with h5py."""
import struct

import numpy as np
import pytest

from conftest import qgpu

h5py = pytest.importorskip("h5py")


def read_tiff(path):
    """A baseline little-endian single-strip TIFF read per the TIFF 6.0 specification (independent of our writer)."""
    b = open(path, "rb").read()
    assert b[:4] == b"II*\x00"
    (ifd,) = struct.unpack_from("<I", b, 4)
    (n,) = struct.unpack_from("<H", b, ifd)
    tags = {}
    for k in range(n):
        tag, typ, count, value = struct.unpack_from("<HHII", b, ifd + 2 + 12 * k)
        if typ == 3 and count == 1:
            value &= 0xFFFF
        if typ == 5:
            num, den = struct.unpack_from("<II", b, value)
            value = num / den
        if typ == 2:
            value = b[value:value + count].rstrip(b"\0").decode()
        tags[tag] = value
    rows, cols = tags[257], tags[256]
    assert tags[258] == 32 and tags[339] == 3 and tags[259] == 1
    data = np.frombuffer(b, "<f4", count=rows * cols, offset=tags[273]).reshape(rows, cols)
    return data, tags


def test_image_save_tiff_and_emd(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--com", "--mean", "--save", "tiff,emd", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("bf", "com_row", "com_col", "mean_pattern"):
        img, tags = read_tiff(tmp_path / f"{name}.tif")
        ref = np.load(tmp_path / f"{name}.npy")
        assert np.array_equal(img, ref.astype(np.float32)), name
        desc = tags[270]
        assert desc.startswith("ImageJ=")
        if name == "mean_pattern":
            assert "unit=mrad" in desc
        else:
            assert "unit=nm" in desc
    _, tags = read_tiff(tmp_path / "bf.tif")
    import json
    cal = json.load(open(tmp_path / "bf.json"))["calibration"]
    assert 1 / tags[282] == pytest.approx(cal["pixel_size"] / 10, rel=1e-5)  # nm per pixel
    with h5py.File(tmp_path / "products.emd", "r") as f:
        assert f.attrs["emd_group_type"] == "file" and f.attrs["version_major"] == 1
        root = f["quantem_products"]
        assert root.attrs["emd_group_type"] == "root"
        assert sorted(k for k in root if k != "metadatabundle") == ["bf", "com_col", "com_row", "mean_pattern"]
        bf = root["bf"]
        assert bf.attrs["emd_group_type"] == "array"
        assert np.array_equal(bf["data"][...], np.load(tmp_path / "bf.npy").astype(np.float32))
        assert bf["dim0"].attrs["units"] == "nm" and bf["dim0"][1] == pytest.approx(cal["pixel_size"] / 10)
        c = root["metadatabundle/calibration"]
        assert c["R_pixel_units"][()] == b"A" and c["R_pixel_size"][()] == pytest.approx(cal["scan_step_angstrom"])
    assert "products.emd" in r.stdout


def test_save_refuses_unknown_formats(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", path, "--backend", "cpu", "--bf", "--save", "tiff,gif", "-o", tmp_path)
    assert r.returncode != 0 and "gif" in r.stderr
