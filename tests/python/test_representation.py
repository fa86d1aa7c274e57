"""load(representation=...): the encoded resident answers like the dense one (CPU here; CUDA where a GPU exists)."""
import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda


def _compare(dense, enc):
    assert dense.representation == "dense" and enc.representation == "encoded"
    assert enc.storage_schema.startswith("encoded-v1")
    assert enc.dense_bytes == dense.nbytes and 0 < enc.resident_bytes < enc.dense_bytes
    assert enc.provenance["representation"] == "encoded"
    assert enc.provenance["resident_bytes"] == enc.resident_bytes
    np.testing.assert_array_equal(enc.read(), dense.read())
    np.testing.assert_array_equal(enc.read((1, 2, 3, 4), (5, 6, 7, 8)), dense.read((1, 2, 3, 4), (5, 6, 7, 8)))
    bf_e, bf_d = qgpu.detector.bf(enc), qgpu.detector.bf(dense)
    np.testing.assert_array_equal(bf_e, bf_d)
    assert bf_e.provenance["representation"] == "encoded" and bf_d.provenance["representation"] == "dense"
    assert bf_e.provenance["dense_bytes"] == enc.dense_bytes
    np.testing.assert_array_equal(qgpu.detector.adf(enc, 10.0, 20.0), qgpu.detector.adf(dense, 10.0, 20.0))
    np.testing.assert_array_equal(qgpu.detector.sum_pattern(enc), qgpu.detector.sum_pattern(dense))
    np.testing.assert_array_equal(qgpu.detector.max_pattern(enc), dense.read().max(axis=(0, 1)))
    np.testing.assert_array_equal(qgpu.detector.max_pattern(dense), dense.read().max(axis=(0, 1)))
    for a, b in zip(qgpu.dpc.center_of_mass(enc), qgpu.dpc.center_of_mass(dense)):
        np.testing.assert_array_equal(a, b)  # same exact sums, same float arithmetic: same bits


def test_encoded_load_matches_dense(sample_path):
    _compare(qgpu.io.load(sample_path, backend="cpu", representation="dense"),
             qgpu.io.load(sample_path, backend="cpu", representation="encoded"))


def test_to_encoded_keeps_the_counts(sample_path):
    dense = qgpu.io.load(sample_path, backend="cpu", representation="dense")
    _compare(dense, dense.to_encoded(tile=64))


def test_auto_is_dense_when_it_fits_and_refuses_clearly(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    assert ds.representation == "dense"
    assert ds.provenance["parameters"]["admission"]["representation"] == "dense"
    with pytest.raises(qgpu.InvalidArgument, match="fits neither"):
        qgpu.io.load(sample_path, backend="cpu", admission_fraction=1e-12)
    with pytest.raises(qgpu.InvalidArgument, match="representation"):
        qgpu.io.load(sample_path, backend="cpu", representation="sparse")


@requires_cuda
def test_encoded_load_on_the_gpu_matches_dense(sample_path):
    _compare(qgpu.io.load(sample_path, backend="cuda", representation="dense"),
             qgpu.io.load(sample_path, backend="cuda", representation="encoded"))


def test_radial_basis_answers_centred_detectors_exactly(sample_path):
    """load(radial_basis="on"): a disk centred on the basis centre at an integer radius comes from its prefix images,
    equal to numpy's sum over the same rasterised pixels; the CoM has the decode path's bits."""
    dense = qgpu.io.load(sample_path, backend="cpu", representation="dense")
    enc = qgpu.io.load(sample_path, backend="cpu", representation="encoded", radial_basis="off")
    basis = qgpu.io.load(sample_path, backend="cpu", representation="encoded", radial_basis="on")
    info = basis.describe()["radial_basis"]
    assert info["built"] is True and info["boundaries"] > 5 and info["bytes"] > 0
    assert "radial_basis" not in enc.describe()
    cr, cc = info["center"]
    frames = dense.read().astype(np.uint64)
    r, c = np.meshgrid(np.arange(frames.shape[2]), np.arange(frames.shape[3]), indexing="ij")
    inside = ((r - cr) ** 2 + (c - cc) ** 2 <= 5.0 ** 2)
    img = qgpu.detector.bf(basis, 5.0, (cr, cc))
    assert img.provenance["parameters"]["strategy"] == "radial basis"
    assert img.provenance["parameters"]["radial_basis"]["radii"] == [[0, 5]]
    np.testing.assert_array_equal(img, (frames * inside).sum(axis=(2, 3)))
    for a, b in zip(qgpu.dpc.center_of_mass(basis), qgpu.dpc.center_of_mass(enc)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(qgpu.InvalidArgument, match="radial_basis"):
        qgpu.io.load(sample_path, backend="cpu", representation="encoded", radial_basis="yes")
    with pytest.raises(qgpu.InvalidArgument, match="encoded"):
        qgpu.io.load(sample_path, backend="cpu", representation="dense", radial_basis="on")
