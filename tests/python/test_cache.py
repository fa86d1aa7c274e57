"""qgpu.cache: build from one load, open without the raw data, products equal the resident's, errors named."""
import os
import shutil

import numpy as np
import pytest

import quantem.gpu as qgpu


@pytest.fixture()
def built(sample_path, tmp_path):
    source = str(tmp_path / "source.h5")
    shutil.copy(sample_path, source)
    ds = qgpu.io.load(source, backend="cpu")
    out = str(tmp_path / "products.h5")
    names = qgpu.cache.build(ds, out, bf_radii=[5], adf=[(10, 20)])
    return ds, source, out, names


def test_products_equal_the_resident(built):
    ds, _, out, names = built
    assert "bf_r5" in names and "adf_10_20" in names and len(names) == 16
    assert qgpu.cache.is_cache_file(out)
    c = qgpu.cache.open(out)
    assert c.format_version == qgpu.cache.cache_format_version == 1
    assert sorted(c.products) == sorted(names)
    fit = qgpu.detector.fit_bf_disk(ds)
    geo = c.geometry
    assert geo["disk_center"] == fit["center"] and geo["disk_radius"] == fit["radius"]
    assert geo["scan_shape"] == (12, 10) and geo["calibration"]["energy_kev"] == 300.0
    r, ctr = fit["radius"], fit["center"]
    counts = ds.read().astype(np.uint64)
    np.testing.assert_array_equal(c["sum_pattern"], counts.sum(axis=(0, 1)))
    np.testing.assert_array_equal(c["frame_totals"], counts.sum(axis=(2, 3)))
    np.testing.assert_array_equal(c["bf"], qgpu.detector.bf(ds, r, ctr))
    np.testing.assert_array_equal(c["abf"], qgpu.detector.adf(ds, 0.5 * r, r, ctr))
    np.testing.assert_array_equal(c["adf_10_20"], qgpu.detector.adf(ds, 10, 20, ctr))
    assert c["bf"].dtype == np.uint64
    np.testing.assert_allclose(c["mean_pattern"], qgpu.detector.mean_pattern(ds), rtol=0, atol=1e-6)
    com_r, com_c = qgpu.dpc.center_of_mass(ds)
    np.testing.assert_allclose(c["com_row"], com_r, rtol=0, atol=1e-6)
    dr, dc = qgpu.dpc.centered_dpc(ds)
    rot = qgpu.dpc.calibrate_rotation(dr, dc)
    assert c.rotation["angle_deg"] == pytest.approx(rot["angle_deg"], abs=1e-9)
    assert c.rotation["transpose"] == rot["transpose"]
    assert c["rotation"].shape == (2, 360) and c["rotation"].dtype == np.float64
    fr, fc = qgpu.dpc.rotate_field(dr, dc, rot["angle_deg"], rot["transpose"])
    phase = qgpu.dpc.idpc(fr, fc)
    np.testing.assert_allclose(c["idpc"], phase, rtol=0, atol=1e-6)
    assert c["idpc"].provenance["operation"] == phase.provenance["operation"]
    assert c.provenance("bf")["backend"] == "cpu"
    assert c.detector("adf_10_20") == {"kind": "annulus", "center": list(ctr), "inner": 10.0, "outer": 20.0}


def test_missing_product_is_named(built):
    _, _, out, _ = built
    c = qgpu.cache.open(out)
    assert "nonesuch" not in c
    with pytest.raises(qgpu.cache.ProductUnavailable, match="product 'nonesuch' is not available"):
        c["nonesuch"]
    with pytest.raises(qgpu.Error):  # ProductUnavailable is a quantem.gpu Error
        c.provenance("nonesuch")


def test_stale_source_warns_or_raises(built):
    _, source, out, _ = built
    assert qgpu.cache.open(out).stale == []
    with open(source, "ab") as f:
        f.write(b"x")
    with pytest.warns(RuntimeWarning, match="is stale: .*size"):
        c = qgpu.cache.open(out)
    assert any("content hash differs" in s for s in c.stale)
    with pytest.raises(qgpu.cache.StaleCache, match="is stale"):
        qgpu.cache.open(out, strict=True)
    os.remove(source)
    c = qgpu.cache.open(out, strict=True)  # no source: products still answer
    assert not c.source_present and c["bf"].shape == (12, 10)


def test_not_a_cache(sample_path):
    assert not qgpu.cache.is_cache_file(sample_path)
    with pytest.raises(qgpu.FormatError, match="not a quantem-gpu product cache"):
        qgpu.cache.open(sample_path)
