"""The Python module quantem.gpu against numpy references (CPU backend here; CUDA parity where a GPU exists)."""
import warnings

import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import HAS_CUDA, require_backend


def test_load_file_written_by_h5py_and_the_plugin(h5py_path):
    path, data = h5py_path
    info = qgpu.io.inspect(path)
    assert info["shape"] == [6, 7, 40, 36]
    assert info["bitshuffle_lz4"] and info["ready"]
    ds = qgpu.io.load(path, backend="cpu")
    assert ds.shape == (6, 7, 40, 36) and ds.dtype == "uint16" and ds.residency == "host"
    np.testing.assert_array_equal(ds.read(), data)
    np.testing.assert_array_equal(ds.read((1, 2, 3, 4), (5, 6, 7, 8)), data[1:4, 2:6, 5:12, 6:14])


def test_binning_is_exact(h5py_path):
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu", scan_region=(0, 0, 6, 6), bin_scan=2, bin_detector=4)
    assert ds.dtype == "uint32" and ds.shape == (3, 3, 10, 9)
    want = data[:6, :6].astype(np.uint64).reshape(3, 2, 3, 2, 10, 4, 9, 4).sum(axis=(1, 3, 5, 7))
    np.testing.assert_array_equal(ds.read(), want)


def test_virtual_detectors_match_numpy(h5py_path):
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    r, c = np.mgrid[0:40, 0:36]
    d2 = (r - 19.5) ** 2 + (c - 17.5) ** 2
    bf = qgpu.detector.bf(ds, radius=5.0, center=(19.5, 17.5))
    assert bf.dtype == np.uint64 and bf.shape == (6, 7)
    np.testing.assert_array_equal(bf, (data * (d2 <= 25)).sum(axis=(2, 3)))
    adf = qgpu.detector.adf(ds, 6.0, 15.0, center=(19.5, 17.5))
    np.testing.assert_array_equal(adf, (data * ((d2 >= 36) & (d2 <= 225))).sum(axis=(2, 3)))
    weights = (r % 3).astype(np.uint32)
    np.testing.assert_array_equal(qgpu.detector.virtual_image(ds, weights),
                                  (data.astype(np.uint64) * weights).sum(axis=(2, 3)))
    assert bf.provenance["operation"] == "detector.bf"
    assert bf.provenance["backend"] == "cpu"
    assert bf.provenance["version"] == qgpu.__version__
    np.testing.assert_array_equal(qgpu.detector.sum_pattern(ds), data.sum(axis=(0, 1)))
    np.testing.assert_array_equal(qgpu.detector.max_pattern(ds), data.max(axis=(0, 1)))


def test_virtual_image_result_dtype_follows_the_mask(h5py_path):
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    r, c = np.mgrid[0:40, 0:36]
    signed = (r % 5 - 2).astype(np.int32)  # -2..2
    want = (data.astype(np.int64) * signed).sum(axis=(2, 3))
    got = qgpu.detector.virtual_image(ds, signed)
    assert got.dtype == np.int64 and got.provenance["output_dtype"] == "int64"
    np.testing.assert_array_equal(got, want)
    neg = qgpu.detector.virtual_image(ds, -np.ones((40, 36), dtype=np.int64))
    np.testing.assert_array_equal(neg, -data.astype(np.int64).sum(axis=(2, 3)))  # negative, not wrapped
    whole = qgpu.detector.virtual_image(ds, signed.astype(np.float64))
    assert whole.dtype == np.int64
    np.testing.assert_array_equal(whole, want)
    unsigned = qgpu.detector.virtual_image(ds, (r % 3).astype(np.uint8))
    assert unsigned.dtype == np.uint64
    boolean = qgpu.detector.virtual_image(ds, r < 20)
    assert boolean.dtype == np.uint64
    np.testing.assert_array_equal(boolean, data[:, :, :20].sum(axis=(2, 3)))
    with pytest.raises(qgpu.InvalidArgument, match="not a whole number"):
        qgpu.detector.virtual_image(ds, np.full((40, 36), 0.5))
    with pytest.raises(qgpu.InvalidArgument, match="not a whole number"):
        qgpu.detector.virtual_image(ds, np.full((40, 36), 1.7))
    with pytest.raises(qgpu.InvalidArgument, match="exceeds 2\\^32 - 1"):
        qgpu.detector.virtual_image(ds, np.full((40, 36), 2 ** 33, dtype=np.uint64))
    with pytest.raises(qgpu.InvalidArgument, match="not supported"):
        qgpu.detector.virtual_image(ds, np.full((40, 36), 1 + 1j))


def test_center_of_mass_matches_numpy(h5py_path):
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    com_r, com_c = qgpu.dpc.center_of_mass(ds)
    r, c = np.mgrid[0:40, 0:36]
    total = data.sum(axis=(2, 3)).astype(np.float64)
    np.testing.assert_allclose(com_r, (data * r).sum(axis=(2, 3)) / total, rtol=1e-6)
    np.testing.assert_allclose(com_c, (data * c).sum(axis=(2, 3)) / total, rtol=1e-6)
    assert com_r.provenance["operation"].startswith("dpc.")


def test_idpc_and_display(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    dr, dc = qgpu.dpc.centered_dpc(ds)
    rot = qgpu.dpc.calibrate_rotation(dr, dc)
    assert 0.0 <= rot["angle_deg"] < 360.0
    phase = qgpu.dpc.idpc(dr, dc)
    assert phase.shape == (12, 10) and np.isfinite(phase).all()
    assert phase.provenance["backend"] == "cpu"
    rgba = qgpu.display.render(phase, colormap="viridis", percentiles=(1, 99))
    assert rgba.shape == (12, 10, 4) and rgba.dtype == np.uint8 and rgba.provenance["backend"] == "cpu"
    counts, lo, hi = qgpu.display.histogram(phase)
    assert counts.sum() == phase.size and lo < hi


def test_dpc_pipeline_equals_the_steps(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qgpu.dpc.RotationUndetermined)  # a small sample: either way is fine here
        r = qgpu.dpc.pipeline(ds)
        dr, dc = qgpu.dpc.centered_dpc(ds)
        rot = qgpu.dpc.calibrate_rotation(dr, dc, ds)
    np.testing.assert_array_equal(r["dpc_row"], dr)
    np.testing.assert_array_equal(r["dpc_col"], dc)
    assert r["calibration"]["method"] == rot["method"]
    assert (r["angle_deg"], r["transpose"]) == (rot["angle_deg"], rot["transpose"])
    fr, fc = qgpu.dpc.rotate_field(dr, dc, rot["angle_deg"], rot["transpose"])
    np.testing.assert_array_equal(r["field_row"], fr)
    np.testing.assert_array_equal(r["field_col"], fc)
    np.testing.assert_array_equal(r["idpc"], qgpu.dpc.idpc(fr, fc))
    given = qgpu.dpc.pipeline(ds, rotation=30.0, transpose=True, idpc=False)
    assert given["calibration"] is None and given["idpc"] is None
    gr, gc = qgpu.dpc.rotate_field(dr, dc, 30.0, True)
    np.testing.assert_array_equal(given["field_row"], gr)
    np.testing.assert_array_equal(given["field_col"], gc)
    # the rotation given to idpc: the same potential as the rotated field's, bit for bit
    np.testing.assert_array_equal(qgpu.dpc.idpc(dr, dc, rotation=30.0, transpose=True), qgpu.dpc.idpc(gr, gc))
    with pytest.raises(qgpu.InvalidArgument, match="rotation"):
        qgpu.dpc.idpc(dr, dc, rotation=float("nan"))
    with pytest.raises(qgpu.InvalidArgument, match="padding"):
        qgpu.dpc.pipeline(ds, padding="sideways")


@pytest.mark.parametrize("rotation", [None, -15.0])
def test_dpc_pipeline_on_the_gpu_equals_the_steps(sample_path, rotation):
    """On cuda the chain makes and integrates the field on the GPU while the maps come down: the same values as the
    steps one by one (whose iDPC sends the field up), and the CPU reference's within float tolerance."""
    require_backend("cuda")
    ds = qgpu.io.load(sample_path, backend="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qgpu.dpc.RotationUndetermined)
        r = qgpu.dpc.pipeline(ds, rotation=rotation)
        dr, dc = qgpu.dpc.centered_dpc(ds)
        rot = qgpu.dpc.calibrate_rotation(dr, dc, ds) if rotation is None else {"angle_deg": rotation, "transpose": False}
    assert (r["angle_deg"], r["transpose"]) == (rot["angle_deg"], rot["transpose"])
    com_r, com_c = qgpu.dpc.center_of_mass(ds)
    np.testing.assert_array_equal(r["com_row"], com_r)
    np.testing.assert_array_equal(r["com_col"], com_c)
    np.testing.assert_array_equal(r["dpc_row"], dr)
    np.testing.assert_array_equal(r["dpc_col"], dc)
    fr, fc = qgpu.dpc.rotate_field(dr, dc, rot["angle_deg"], rot["transpose"])
    np.testing.assert_array_equal(r["field_row"], fr)
    np.testing.assert_array_equal(r["field_col"], fc)
    np.testing.assert_array_equal(r["idpc"], qgpu.dpc.idpc(fr, fc))
    assert r["idpc"].provenance["backend"] == "cuda"
    assert "field_from" in r["idpc"].provenance["parameters"]
    cpu = qgpu.dpc.pipeline(qgpu.io.load(sample_path, backend="cpu"), rotation=rot["angle_deg"],
                            transpose=rot["transpose"])
    ref = np.asarray(cpu["idpc"], np.float64)
    got = np.asarray(r["idpc"], np.float64)
    assert np.linalg.norm(got - ref) <= 1e-5 * np.linalg.norm(ref)


def test_render_pattern_shows_the_halo(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    mean = qgpu.detector.mean_pattern(ds)
    rgba = qgpu.display.render_pattern(mean, colormap="gray")
    assert rgba.shape == (48, 48, 4) and rgba.provenance["backend"] == "cpu"
    faint = (mean > 0) & (mean <= 2.0 / (12 * 10))  # one or two counts over the whole scan
    assert faint.any() and (rgba[..., 0][faint] > 0).all()  # visible, where log(1 + v) would be black
    assert (rgba[..., 0][mean == 0] == 0).all()


def test_rotation_of_a_structureless_field_warns():
    rng = np.random.default_rng(1)
    noise_r, noise_c = rng.normal(size=(2, 40, 40)).astype(np.float32)
    with pytest.warns(qgpu.dpc.RotationUndetermined, match="undetermined"):
        rot = qgpu.dpc.calibrate_rotation(noise_r, noise_c)
    assert not rot["determined"] and rot["confidence"] < 0.1
    assert rot["provenance"]["parameters"]["warning"] == rot["warning"]


def test_errors_are_python_exceptions(sample_path, tmp_path):
    with pytest.raises(qgpu.IoError, match="file not found"):
        qgpu.io.load(str(tmp_path / "missing.h5"), backend="cpu")
    with pytest.raises(qgpu.IoError, match="/nope"):
        qgpu.io.load(sample_path, backend="cpu", dataset="/nope")
    with pytest.raises(qgpu.RegionError, match="out of bounds"):
        qgpu.io.load(sample_path, backend="cpu", scan_region=(10, 0, 5, 5))
    with pytest.raises(qgpu.InvalidArgument, match="unknown backend"):
        qgpu.io.load(sample_path, backend="opencl")
    with pytest.raises(qgpu.InvalidArgument):
        qgpu.detector.bf(qgpu.io.load(sample_path, backend="cpu"), radius=-1.0, center=(24, 24))
    assert issubclass(qgpu.RegionError, qgpu.Error) and issubclass(qgpu.Error, RuntimeError)
    with pytest.raises(FileNotFoundError):  # builtins catch them too
        qgpu.io.load(str(tmp_path / "missing.h5"), backend="cpu")
    with pytest.raises(ValueError, match="out of bounds"):
        qgpu.io.load(sample_path, backend="cpu", scan_region=(10, 0, 5, 5))
    with pytest.raises(ValueError):
        qgpu.detector.bf(qgpu.io.load(sample_path, backend="cpu"), radius=-1.0, center=(24, 24))
    assert issubclass(qgpu.IoError, OSError) and issubclass(qgpu.InvalidArgument, ValueError)
    assert issubclass(qgpu.OutOfMemory, MemoryError) and issubclass(qgpu.OutOfMemory, qgpu.DeviceError)
    assert issubclass(qgpu.DeviceError, qgpu.Error) and qgpu.OutOfMemory.__module__ == "quantem.gpu"


def test_auto_never_falls_back(sample_path):
    if qgpu.device.detect()["cuda_available"]:
        assert qgpu.io.load(sample_path, backend="auto").backend == "cuda"
    else:
        with pytest.raises(qgpu.BackendUnavailable, match="needs a usable CUDA GPU"):
            qgpu.io.load(sample_path, backend="auto")


@pytest.mark.parametrize("backend", ["cuda", "vulkan"])
def test_gpu_equals_cpu(sample_path, backend):
    require_backend(backend)
    gpu = qgpu.io.load(sample_path, backend=backend)
    cpu = qgpu.io.load(sample_path, backend="cpu")
    assert gpu.residency == "gpu"
    assert gpu.backend == backend
    np.testing.assert_array_equal(gpu.read(), cpu.read())
    np.testing.assert_array_equal(gpu.read(scan_region=(2, 3, 4, 5), detector_region=(10, 12, 20, 16)),
                                  cpu.read(scan_region=(2, 3, 4, 5), detector_region=(10, 12, 20, 16)))
    bf = qgpu.detector.bf(gpu)
    np.testing.assert_array_equal(bf, qgpu.detector.bf(cpu))
    assert bf.provenance["backend"] == backend
    np.testing.assert_array_equal(qgpu.detector.sum_pattern(gpu), qgpu.detector.sum_pattern(cpu))
    np.testing.assert_array_equal(qgpu.detector.max_pattern(gpu), qgpu.detector.max_pattern(cpu))
    np.testing.assert_array_equal(qgpu.detector.mean_pattern(gpu), qgpu.detector.mean_pattern(cpu))
    for a, b in zip(qgpu.dpc.center_of_mass(gpu), qgpu.dpc.center_of_mass(cpu)):
        np.testing.assert_array_equal(a, b)


def test_vulkan_only_when_asked(sample_path, monkeypatch):
    monkeypatch.delenv("QGPU_BACKEND", raising=False)
    v = qgpu.device.vulkan_device()
    if not v["available"]:
        assert v["reason"]
        with pytest.raises(qgpu.BackendUnavailable, match="vulkan"):
            qgpu.io.load(sample_path, backend="vulkan")
        return
    assert v["name"] and v["driver"]
    assert qgpu.device.resolve("vulkan") == "vulkan"
    if not HAS_CUDA:  # auto is cuda-first and never takes vulkan
        with pytest.raises(qgpu.BackendUnavailable, match="needs a usable CUDA GPU"):
            qgpu.io.load(sample_path, backend="auto")
    monkeypatch.setenv("QGPU_BACKEND", "vulkan")
    ds = qgpu.io.load(sample_path)
    assert ds.backend == "vulkan"
    com_r, com_c = qgpu.dpc.center_of_mass(ds)
    phi = qgpu.dpc.idpc(com_r, com_c)  # VkFFT on the vulkan device
    assert phi.provenance["backend"] == "vulkan"


def test_ssb_on_vulkan_matches_cpu(tmp_path):
    if not qgpu.device.vulkan_device()["available"]:
        pytest.skip("no Vulkan device")
    path = str(tmp_path / "defocus.h5")
    qgpu.io.write_sample(path, scan=(40, 48), detector=(64, 64), defocus=150.0, dose=60000.0)
    cpu = qgpu.io.load(path, backend="cpu")
    vk = qgpu.io.load(path, backend="vulkan")
    a = qgpu.ssb.reconstruct(cpu, defocus=150.0)
    b = qgpu.ssb.reconstruct(vk, defocus=150.0)
    assert b.provenance["backend"] == "vulkan" and b.shape == a.shape == (40, 48)
    np.testing.assert_allclose(b, a, atol=1e-4, rtol=0)  # float32 engine vs the float64 reference (tests/ssb)
    f = qgpu.ssb.fit(vk, trials=40, c1_range=(-400, 400), detector_bin=2, defocus=0.0)
    assert abs(f["aberrations"]["C1"] - 150.0) < 15.0


def test_ssb_recovers_the_defocus_and_the_object(tmp_path):
    path = str(tmp_path / "defocus.h5")
    qgpu.io.write_sample(path, scan=(40, 48), detector=(64, 64), defocus=150.0, dose=60000.0)
    ds = qgpu.io.load(path, backend="cpu")
    f = qgpu.ssb.fit(ds, trials=40, c1_range=(-400, 400), detector_bin=2, defocus=0.0)
    assert abs(f["aberrations"]["C1"] - 150.0) < 15.0
    assert len(f["loss_trace"]) <= 40
    phase = qgpu.ssb.reconstruct(ds, defocus=f["aberrations"]["C1"])
    assert phase.shape == (40, 48) and phase.provenance["backend"] == "cpu"
    import h5py
    with h5py.File(path) as h:
        truth = h["/entry/truth/phase"][:]
    assert np.corrcoef(phase.ravel(), truth.ravel())[0, 1] >= 0.9


def test_dataset_indexes_like_numpy(h5py_path):
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    keys = [(1, 2), (-1, -7), 3, (slice(1, 4),), (slice(None, None, 2), 3), (Ellipsis, slice(2, 30), slice(None, None, -3)),
            (slice(5, 1, -2), slice(None), 3, 4), (slice(3, 3),), (0, 0, 5, 6), (Ellipsis, 7)]
    for key in keys:
        got, want = ds[key], data[key]
        assert got.shape == want.shape and got.dtype == np.uint16, key
        np.testing.assert_array_equal(got, want, err_msg=str(key))
    assert int(ds[0, 0, 5, 6]) == int(data[0, 0, 5, 6])
    with pytest.raises(IndexError, match="out of bounds"):
        ds[6, 0]
    with pytest.raises(IndexError, match="ints or slices"):
        ds[[0, 1]]
    with pytest.raises(IndexError, match="too many indices"):
        ds[0, 0, 0, 0, 0]
    assert ds.ndim == 4 and len(ds) == 6
    np.testing.assert_array_equal(np.asarray(ds), data)


def test_asarray_refuses_big_data_clearly(h5py_path, monkeypatch):
    path, _ = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    monkeypatch.setattr(qgpu.io, "ASARRAY_LIMIT_BYTES", 1000)
    with pytest.raises(qgpu.InvalidArgument, match=r"would copy 120960 bytes"):
        np.asarray(ds)


def test_results_derive_plain_numpy_values(h5py_path):
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    bf = qgpu.detector.bf(ds, radius=5.0, center=(19.5, 17.5))
    assert isinstance(bf, qgpu.Result) and bf.provenance["operation"] == "detector.bf"
    total = bf.sum()
    assert not isinstance(total, np.ndarray) and int(total) == int(np.asarray(bf).sum())
    assert not isinstance(bf.max(), np.ndarray) and not isinstance(np.mean(bf), np.ndarray)
    for derived in [bf[1:], bf * 2, bf.astype(float), np.log1p(bf), bf.copy(), bf[0]]:
        assert type(derived) is np.ndarray and getattr(derived, "provenance", None) is None


def test_results_hold_the_computed_values_without_a_copy(h5py_path):
    # The arrays view the C++ result's own memory (handed to numpy with an owner), not a copy of it: they outlive the
    # dataset, are writable, and their base is that owner.
    import gc
    path, data = h5py_path
    ds = qgpu.io.load(path, backend="cpu")
    r, c = np.mgrid[0:40, 0:36]
    disk = (r - 19.5) ** 2 + (c - 17.5) ** 2 <= 25
    results = [qgpu.detector.bf(ds, radius=5.0, center=(19.5, 17.5)),
               qgpu.detector.virtual_image(ds, disk.astype(np.uint8)), *qgpu.dpc.center_of_mass(ds)]
    del ds
    gc.collect()
    want = (data * disk).sum(axis=(2, 3))
    for a in results:
        base = a
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        assert type(base).__name__ == "PyCapsule", type(base)
    np.testing.assert_array_equal(results[0], want)
    np.testing.assert_array_equal(results[1], want)
    results[0][0, 0] = 7
    assert results[0][0, 0] == 7
    total = data.sum(axis=(2, 3)).astype(np.float64)
    np.testing.assert_allclose(results[2], (data * r).sum(axis=(2, 3)) / total, rtol=1e-6)


def test_ssb_amplitude_is_that_of_the_same_object(sample_path):
    # object = 1 + i phi_lin (ssb.hpp): phase = atan(phi_lin), amplitude = sqrt(1 + phi_lin^2) = 1 / cos(phase)
    ds = qgpu.io.load(sample_path, backend="cpu")
    phase, amplitude = qgpu.ssb.reconstruct(ds, C1=0.0, weighting="amplitude", with_amplitude=True)
    np.testing.assert_array_equal(phase, qgpu.ssb.reconstruct(ds, C1=0.0, weighting="amplitude"))
    assert amplitude.shape == phase.shape and amplitude.provenance is not None
    np.testing.assert_allclose(np.asarray(amplitude), 1.0 / np.cos(np.asarray(phase, np.float64)), rtol=2e-6)
    assert float(np.asarray(amplitude).min()) >= 1.0 - 1e-6
    p2, a2 = qgpu.ssb.preview(ds, 2, C1=0.0, with_amplitude=True)
    np.testing.assert_allclose(np.asarray(a2), 1.0 / np.cos(np.asarray(p2, np.float64)), rtol=2e-6)


def test_ssb_weighting_and_c1_keywords(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    for w in ("amplitude", "phase", "wiener"):
        phase = qgpu.ssb.reconstruct(ds, C1=0.0, weighting=w)
        assert phase.provenance["parameters"]["weighting"] == w
        assert phase.provenance["parameters"]["weighting_reason"] == "given"
    auto = qgpu.ssb.reconstruct(ds, defocus=0.0)
    assert auto.provenance["parameters"]["weighting_requested"] == "auto"
    assert auto.provenance["parameters"]["weighting"] in ("wiener", "amplitude")
    np.testing.assert_array_equal(qgpu.ssb.reconstruct(ds, C1=50.0, weighting="amplitude"),
                                  qgpu.ssb.reconstruct(ds, defocus=50.0, weighting="amplitude"))
    with pytest.raises(ValueError, match="unknown weighting 'gamma'"):
        qgpu.ssb.reconstruct(ds, weighting="gamma")
    with pytest.raises(ValueError, match="not both"):
        qgpu.ssb.reconstruct(ds, C1=1.0, defocus=1.0)
    assert "positive = overfocus" in qgpu.ssb.__doc__.lower() and "C1 = -defocus" in qgpu.ssb.__doc__


def test_ssb_rejects_unknown_keywords(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")
    with pytest.raises(qgpu.InvalidArgument, match="unknown parameter 'defocs'"):
        qgpu.ssb.reconstruct(ds, defocs=100.0)
    with pytest.raises(ValueError, match="unknown parameter 'energie'"):
        qgpu.ssb.fit(ds, trials=5, energie=300)
    with pytest.raises(ValueError, match=r"ssb: energy must be a finite number > 0, got -5"):
        qgpu.ssb.reconstruct(ds, energy=-5.0)
    with pytest.raises(ValueError, match=r"ssb: C1 \(defocus\) must be within \+-1e\+06 angstrom"):
        qgpu.ssb.preview(ds, defocus=2e6)
