"""Issue 25, point 3 as a user meets it: `qgpu sample --byte-order big` (uint16 counts stored big-endian), then
`qgpu info` shows the byte order and `qgpu image --bf` gives the BF of the same counts stored little-endian (it
was 65,252,864 instead of 254,894 on an 8x8 x 32x32 sample), on both cpu decoders."""
import json

import numpy as np
import pytest

from conftest import qgpu


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_big_endian_sample_info_and_bf(tmp_path, dtype):
    paths = {}
    for order in ("little", "big"):
        paths[order] = tmp_path / f"{order}.h5"
        r = qgpu("sample", paths[order], "--scan", 8, 8, "--detector", 32, 32, "--dtype", dtype, "--byte-order", order)
        assert r.returncode == 0, r.stderr
    info = json.loads(qgpu("info", paths["big"], "--json").stdout)
    assert (info["byte_order"], info["precision"], info["bit_offset"]) == ("big", 8 * np.dtype(dtype).itemsize, 0)
    assert json.loads(qgpu("info", paths["little"], "--json").stdout)["byte_order"] == "little"
    assert f"dtype       {dtype} big-endian\n" in qgpu("info", paths["big"]).stdout
    bfs = {}
    for order in ("little", "big"):
        for decoder in ("quantem", "hdf5"):
            out = tmp_path / f"{order}_{decoder}"
            r = qgpu("image", paths[order], "--bf", 6, "--center", 16, 16, "--backend", "cpu", "--decoder", decoder,
                     "-o", out)
            assert r.returncode == 0, r.stderr
            bfs[order, decoder] = np.load(out / "bf.npy")
    want = bfs["little", "hdf5"]
    assert want.sum() < 8 * 8 * 32 * 32 * 20000  # counts, not byte-swapped values
    for key, bf in bfs.items():
        np.testing.assert_array_equal(bf, want, err_msg=str(key))


def test_byte_order_option_is_checked(tmp_path):
    r = qgpu("sample", tmp_path / "x.h5", "--byte-order", "middle")
    assert r.returncode != 0 and "--byte-order" in r.stderr
