"""scan_bin of the virtual detectors and the CoM (the display answers of a large scan): against numpy block sums of
the frames read back, on a dense load and on an encoded one with the radial basis (cpu backend here; the GPU's
binning is tested against the CPU reference in test_radial_basis.cpp)."""
import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import HAS_CUDA


def blocks(a, b):
    """Sums of b x b blocks over the first two axes (a scan-shaped image, or frames)."""
    r, c = a.shape[0] // b, a.shape[1] // b
    return a.reshape((r, b, c, b) + a.shape[2:]).sum(axis=(1, 3))


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("scanbin") / "s.h5"
    qgpu.io.write_sample(str(p), scan=(8, 12), detector=(32, 32), seed=4)
    return str(p)


@pytest.fixture(scope="module", params=["dense", "encoded", "copy"])
def ds(request, path):
    if request.param == "dense":
        return qgpu.io.load(path, backend="cpu")
    if request.param == "copy":  # the scan-binned copy at bin 2 (no basis): every query at bin 2 and 4 decodes it
        d = qgpu.io.load(path, backend="cpu", representation="encoded", radial_basis="off", scan_binned=2)
        assert d.describe()["scan_binned"]["shape"] == [4, 6, 32, 32]
        return d
    return qgpu.io.load(path, backend="cpu", representation="encoded", radial_basis="on")


def uses_copy(ds):
    return ds.representation == "encoded" and "scan_binned" in ds.describe()


def test_virtual_detectors_are_block_sums(ds):
    frames = ds.read().astype(np.int64)
    cr, cc = qgpu.detector.fit_bf_disk(ds)["center"]
    for b in (2, 4):
        got = qgpu.detector.bf(ds, radius=6, center=(cr, cc), scan_bin=b)
        full = qgpu.detector.bf(ds, radius=6, center=(cr, cc))
        if uses_copy(ds):
            assert got.provenance["parameters"]["strategy"].endswith("on the scan-binned copy")
            assert got.provenance["parameters"]["scan_binned_copy"] == 2
        elif ds.representation == "encoded":  # the basis' centre is this fit's: binned by the basis
            assert got.provenance["parameters"]["strategy"] == "radial basis"
        assert got.shape == (8 // b, 12 // b) and got.dtype == np.uint64
        np.testing.assert_array_equal(got, blocks(np.asarray(full, dtype=np.int64), b))
        assert got.provenance["parameters"]["scan_bin"] == b
        if ds.calibration.scan_pixel_size is not None:
            assert got.pixel_size[0] == pytest.approx(b * ds.calibration.scan_pixel_size)
        ring = qgpu.detector.adf(ds, inner=8, outer=14, center=(cr, cc), scan_bin=b)
        np.testing.assert_array_equal(ring, blocks(np.asarray(qgpu.detector.adf(ds, inner=8, outer=14, center=(cr, cc)),
                                                              dtype=np.int64), b))
        # an arbitrary mask, unsigned and signed weights, against the frames themselves
        w = (np.arange(32 * 32).reshape(32, 32) % 5).astype(np.uint32)
        want = blocks(np.einsum("ijkl,kl->ij", frames, w.astype(np.int64)), b)
        np.testing.assert_array_equal(qgpu.detector.virtual_image(ds, w, scan_bin=b), want)
        s = w.astype(np.int32) - 2
        signed = qgpu.detector.virtual_image(ds, s, scan_bin=b)
        assert signed.dtype == np.int64
        np.testing.assert_array_equal(signed, blocks(np.einsum("ijkl,kl->ij", frames, s.astype(np.int64)), b))
    with pytest.raises(qgpu.InvalidArgument, match="scan bin 3"):
        qgpu.detector.bf(ds, scan_bin=3)


def test_center_of_mass_of_the_binned_scan(ds):
    frames = blocks(ds.read().astype(np.float64), 2)  # the binned scan's frames, exact sums (< 2^53)
    rows, cols = np.indices(frames.shape[2:])
    s = frames.sum(axis=(2, 3))
    want_r = ((frames * rows).sum(axis=(2, 3)) / s).astype(np.float32)
    want_c = ((frames * cols).sum(axis=(2, 3)) / s).astype(np.float32)
    r, c = qgpu.dpc.center_of_mass(ds, scan_bin=2)
    assert r.shape == (4, 6)
    np.testing.assert_array_equal(r, want_r)
    np.testing.assert_array_equal(c, want_c)
    assert r.provenance["parameters"]["scan_bin"] == 2
    if uses_copy(ds):
        assert r.provenance["parameters"]["scan_binned_copy"] == 2


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device here (the GPU's binning runs in the device's Python step)")
def test_cuda_binned_answers_equal_the_cpu(path):
    cpu = qgpu.io.load(path, backend="cpu")
    gpu = qgpu.io.load(path, backend="cuda", representation="encoded", radial_basis="on")
    for b in (2, 4):
        np.testing.assert_array_equal(qgpu.detector.bf(gpu, radius=6, scan_bin=b), qgpu.detector.bf(cpu, radius=6, scan_bin=b))
        np.testing.assert_array_equal(qgpu.dpc.center_of_mass(gpu, scan_bin=b)[0], qgpu.dpc.center_of_mass(cpu, scan_bin=b)[0])


def test_ssb_slider_keeps_g_and_bins_the_scan(path):
    # the slider's answers equal fresh previews; scan_bin: the low-pass answer on the binned grid (shape, provenance)
    ds = qgpu.io.load(path, backend="cpu")
    s = qgpu.ssb.Slider(ds, detector_bin=2)
    assert s.detector_bin == 2
    for c1 in (0.0, 150.0, -80.0):
        np.testing.assert_array_equal(s.at(C1=c1), qgpu.ssb.preview(ds, 2, C1=c1))
    np.testing.assert_array_equal(s.at(defocus=150.0), qgpu.ssb.preview(ds, 2, defocus=150.0))
    phase, amplitude = s.at(C1=150.0, scan_bin=2, with_amplitude=True)
    assert phase.shape == (4, 6) and amplitude.shape == (4, 6)
    assert phase.provenance["parameters"]["scan_bin"] == 2
    np.testing.assert_allclose(amplitude, np.hypot(1.0, np.tan(np.asarray(phase, np.float64))), rtol=1e-6)
    with pytest.raises(qgpu.InvalidArgument, match="scan bin 5"):
        s.at(C1=0.0, scan_bin=5)
    with pytest.raises(qgpu.InvalidArgument, match="not both"):
        s.at(C1=1.0, defocus=1.0)
