"""py4DSTEM EMD 1.0 (emdfile) and HyperSpy .hspy files, written here with h5py after the layouts of emdfile
(classes/node.py, array.py, metadata.py; utils._write_header) and HyperSpy (io_plugins hspy: /Experiments/<title>/data
with axis-N groups), read by the hdf5 reader with their calibration; the data load exactly as h5py reads them;
every malformed header field is a clear error; `qgpu convert --to emd` writes a file whose layout is what emdfile's
reader checks, and that loads back bit for bit with its calibration."""
import json
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda

h5py = pytest.importorskip("h5py")


def cube(shape=(4, 5, 12, 10), dtype="<u2", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.poisson(4.0, size=shape)
    a[..., 5:7, 4:6] += 200
    if np.dtype(dtype).kind == "f":
        return (a * 0.25 - 1.0).astype(dtype)
    return a.astype(dtype)


def write_emd(path, data, r=(0.5, "nm"), q=(0.8, "mrad"), calibration=True, dims=True, root="py4DSTEM_root",
              major=1, extra=None):
    """An EMD 1.0 file as py4DSTEM.save(datacube) writes it (h5py: str attributes are variable-length UTF-8)."""
    with h5py.File(path, "w") as f:
        f.attrs["emd_group_type"] = "file"
        f.attrs["version_major"] = major
        f.attrs["version_minor"] = 0
        f.attrs["authoring_program"] = "emdfile"
        g = f.create_group(root)
        g.attrs["emd_group_type"] = "root"
        g.attrs["python_class"] = "Root"
        if calibration:
            b = g.create_group("metadatabundle")
            b.attrs["emd_group_type"] = "metadatabundle"
            c = b.create_group("calibration")
            c.attrs["emd_group_type"] = "metadata"
            c.attrs["python_class"] = "Calibration"
            for k, v in (("Q_pixel_size", q[0]), ("R_pixel_size", r[0])):
                d = c.create_dataset(k, data=v)
                d.attrs["type"] = b"number"
            for k, v in (("Q_pixel_units", q[1]), ("R_pixel_units", r[1])):
                d = c.create_dataset(k, data=v.encode() if isinstance(v, str) else v)
                d.attrs["type"] = b"string"
            d = c.create_dataset("QR_flip", data=False, dtype=bool)
            d.attrs["type"] = b"bool"
        a = g.create_group("datacube")
        a.attrs["emd_group_type"] = "array"
        a.attrs["python_class"] = "DataCube"
        ds = a.create_dataset("data", data=data)
        ds.attrs["units"] = "pixel intensity"
        if dims:
            steps = (r[0], r[0], q[0], q[0])
            units = (r[1], r[1], q[1], q[1])
            for n, name in enumerate(("Rx", "Ry", "Qx", "Qy")):
                d = a.create_dataset(f"dim{n}", data=np.array([0.0, steps[n]]))
                d.attrs["name"] = name
                d.attrs["units"] = units[n]
        if extra:
            extra(f)
    return data


def write_hspy(path, data, scales=(0.3, 0.3, 0.05, 0.05), units=("nm", "nm", "mrad", "mrad"), offsets=None,
               navigate=(True, True, False, False), energy=200.0, compression=None, extra=None):
    """A HyperSpy 4D signal as hs.save(...hspy) writes it: axis-i describes data dimension i."""
    with h5py.File(path, "w") as f:
        f.attrs["file_format"] = "HyperSpy"
        f.attrs["file_format_version"] = "3.3"
        e = f.create_group("Experiments")
        s = e.create_group("__unnamed__")
        s.create_dataset("data", data=data, chunks=True if compression else None, compression=compression)
        names = ("y", "x", "ky", "kx")
        offsets = offsets or (0, 0, 0, 0)
        for i in range(data.ndim):
            a = s.create_group(f"axis-{i}")
            a.attrs["name"] = names[i]
            a.attrs["scale"] = scales[i]
            a.attrs["offset"] = offsets[i]
            a.attrs["units"] = units[i]
            a.attrs["size"] = data.shape[i]
            a.attrs["navigate"] = navigate[i]
        if energy:
            t = s.create_group("metadata/Acquisition_instrument/TEM")
            t.attrs["beam_energy"] = energy
        if extra:
            extra(f, s)
    return data


def test_emd_datacube_loads_exactly_with_calibration(tmp_path):
    p = tmp_path / "a.emd"
    ref = write_emd(p, cube())
    info = qgpu.io.inspect(str(p))
    assert info["reader"] == "hdf5" and info["metadata"]["layout"] == "py4DSTEM EMD 1.0"
    assert info["dataset_path"] == "/py4DSTEM_root/datacube/data"
    assert info["shape"] == [4, 5, 12, 10] and info["scan_shape_source"] == "dataset dims"
    assert info["codec"] == "plain"  # contiguous: read as frame records by our decoders
    assert info["calibration"]["scan_step_angstrom"] == pytest.approx(5.0)
    assert info["calibration"]["detector_mrad_per_pixel"] == pytest.approx(0.8)
    assert "R_pixel_size" in info["calibration_detail"]["scan_step_angstrom"]["source"]
    for decoder in ("quantem", "hdf5"):
        out = np.asarray(qgpu.io.load(str(p), backend="cpu", decoder=decoder))
        assert np.array_equal(out, ref), decoder


def test_emd_float32_and_inverse_angstrom(tmp_path):
    p = tmp_path / "f.emd"
    ref = write_emd(p, cube(dtype="<f4"), r=(2.0, "A"), q=(0.01, "A^-1"))
    info = qgpu.io.inspect(str(p))
    assert info["dtype"] == "float32"
    assert info["calibration"]["scan_step_angstrom"] == pytest.approx(2.0)
    assert info["calibration"]["detector_inv_angstrom_per_pixel"] == pytest.approx(0.01)
    assert "detector_mrad_per_pixel" not in info["calibration"]  # no energy in the file
    assert np.array_equal(np.asarray(qgpu.io.load(str(p), backend="cpu")), ref)


def test_emd_dim_vectors_calibrate_without_a_calibration_group(tmp_path):
    p = tmp_path / "d.emd"
    write_emd(p, cube(), calibration=False, r=(0.25, "nm"), q=(1.5, "mrad"))
    cal = qgpu.io.inspect(str(p))["calibration"]
    assert cal["scan_step_angstrom"] == pytest.approx(2.5) and cal["detector_mrad_per_pixel"] == pytest.approx(1.5)
    # full-length dim vectors (one value per pixel) give the same step
    def full(f):
        a = f["py4DSTEM_root/datacube"]
        del a["dim0"]
        d = a.create_dataset("dim0", data=np.arange(4) * 0.25)
        d.attrs["name"], d.attrs["units"] = "Rx", "nm"
    write_emd(p, cube(), calibration=False, r=(0.25, "nm"), extra=full)
    assert qgpu.io.inspect(str(p))["calibration"]["scan_step_angstrom"] == pytest.approx(2.5)


def test_emd_pixels_units_are_uncalibrated_and_bad_values_warn(tmp_path):
    p = tmp_path / "u.emd"
    write_emd(p, cube(), r=(1, "pixels"), q=(1, "pixels"))
    info = qgpu.io.inspect(str(p))
    assert "scan_step_angstrom" not in info["calibration"] and "detector_mrad_per_pixel" not in info["calibration"]
    write_emd(p, cube(), r=(-1.0, "nm"), q=(0.5, "furlong"))
    info = qgpu.io.inspect(str(p))
    assert "scan_step_angstrom" not in info["calibration"]
    w = " ".join(info["metadata_warnings"])
    assert "not a positive number" in w and "furlong" in w


def test_emd_several_datacubes_take_the_first_and_say_so(tmp_path):
    p = tmp_path / "two.emd"
    ref = cube(seed=2)

    def second(f):
        a = f["py4DSTEM_root"].create_group("zz_other")
        a.attrs["emd_group_type"] = "array"
        a.attrs["python_class"] = "DataCube"
        a.create_dataset("data", data=cube(seed=3))
    write_emd(p, ref, extra=second)
    info = qgpu.io.inspect(str(p))
    assert info["dataset_path"] == "/py4DSTEM_root/datacube/data"
    assert any("several datacubes" in w and "zz_other" in w for w in info["warnings"])
    other = qgpu.io.inspect(str(p), dataset="/py4DSTEM_root/zz_other/data")
    assert other["dataset_path"] == "/py4DSTEM_root/zz_other/data"
    assert np.array_equal(np.asarray(qgpu.io.load(str(p), backend="cpu", dataset="/py4DSTEM_root/zz_other/data")),
                          cube(seed=3))


def _set_attr(path, obj, name, value):
    with h5py.File(path, "a") as f:
        f[obj].attrs[name] = value


def _replace(path, obj, value, **kw):
    with h5py.File(path, "a") as f:
        attrs = dict(f[obj].attrs)
        del f[obj]
        d = f.create_dataset(obj, data=value, **kw)
        for k, v in attrs.items():
            d.attrs[k] = v


@pytest.mark.parametrize("damage,message", [
    (lambda p: _set_attr(p, "/", "version_major", 2), "version_major is 2"),
    (lambda p: _set_attr(p, "/", "version_major", "one"), "attribute version_major holds neither numbers"),
    (lambda p: _set_attr(p, "/py4DSTEM_root", "emd_group_type", "node"), "no root group"),
    (lambda p: _set_attr(p, "/py4DSTEM_root", "emd_group_type", 3), "emd_group_type is not one string"),
    (lambda p: _replace(p, "/py4DSTEM_root/datacube/data", np.zeros((3, 4))), "no 4D datacube"),
    (lambda p: _replace(p, "/py4DSTEM_root/datacube/dim2", np.array([0.0, 1.0, 2.0])), "dim2 has 3 values"),
    (lambda p: _replace(p, "/py4DSTEM_root/datacube/dim0", np.array([b"a", b"b"])), "dim0 holds strings"),
    (lambda p: _replace(p, "/py4DSTEM_root/metadatabundle/calibration/R_pixel_size", b"big"),
     "R_pixel_size is a string 'big'; expected one number"),
    (lambda p: _replace(p, "/py4DSTEM_root/metadatabundle/calibration/Q_pixel_size", np.array([1.0, 2.0])),
     "Q_pixel_size is 2 values"),
    (lambda p: _replace(p, "/py4DSTEM_root/metadatabundle/calibration/R_pixel_units", 7), "R_pixel_units is not a string"),
])
def test_emd_malformed_fields_are_named(tmp_path, damage, message):
    p = tmp_path / "bad.emd"
    write_emd(p, cube())
    damage(p)
    with pytest.raises(qgpu.FormatError, match=message.replace("(", r"\(").replace("[", r"\[")):
        qgpu.io.inspect(str(p))


def test_emd_array_without_data_is_named(tmp_path):
    p = tmp_path / "nodata.emd"
    write_emd(p, cube(), extra=lambda f: f["py4DSTEM_root"].create_group("empty").attrs.update(
        {"emd_group_type": "array"}))
    with pytest.raises(qgpu.FormatError, match="/py4DSTEM_root/empty .* has no dataset 'data'"):
        qgpu.io.inspect(str(p))


def test_hspy_loads_exactly_with_axes_calibration(tmp_path):
    p = tmp_path / "s.hspy"
    ref = write_hspy(p, cube(shape=(3, 4, 16, 14)), offsets=(0, 0, -8 * 0.05, -6 * 0.05))
    info = qgpu.io.inspect(str(p))
    assert info["metadata"]["layout"] == "HyperSpy" and info["dataset_path"] == "/Experiments/__unnamed__/data"
    assert info["shape"] == [3, 4, 16, 14]
    cal = info["calibration"]
    assert cal["scan_step_angstrom"] == pytest.approx(3.0) and cal["detector_mrad_per_pixel"] == pytest.approx(0.05)
    assert cal["energy_kev"] == pytest.approx(200.0)
    assert cal["beam_center_row_px"] == pytest.approx(8.0) and cal["beam_center_col_px"] == pytest.approx(6.0)
    assert [a["navigate"] for a in info["metadata"]["hspy_axes"]] == [True, True, False, False]
    assert np.array_equal(np.asarray(qgpu.io.load(str(p), backend="cpu")), ref)


def test_hspy_compressed_and_reciprocal_units(tmp_path):
    p = tmp_path / "c.hspy"
    ref = write_hspy(p, cube(shape=(3, 4, 16, 14), dtype="<f4"), units=("nm", "nm", "1/nm", "1/nm"),
                     scales=(0.3, 0.3, 0.2, 0.2), compression="gzip")
    info = qgpu.io.inspect(str(p))
    assert info["calibration"]["detector_inv_angstrom_per_pixel"] == pytest.approx(0.02)
    mrad = info["calibration"]["detector_mrad_per_pixel"]  # with the 200 keV beam energy: 0.02 / A x 0.02508 A
    assert mrad == pytest.approx(0.02 * 0.025079 * 1e3, rel=1e-4)
    assert np.array_equal(np.asarray(qgpu.io.load(str(p), backend="cpu")), ref)


@pytest.mark.parametrize("damage,message", [
    (lambda f, s: f.attrs.__delitem__("file_format") or f.attrs.__setitem__("file_format", "HyperSpy") or
     f.__delitem__("Experiments"), "no /Experiments group"),
    (lambda f, s: s.__delitem__("axis-2"), "axis-2 is missing"),
    (lambda f, s: s["axis-1"].attrs.__setitem__("size", 99), "axis-1 size is 99 but the data's dimension 1 is 4"),
    (lambda f, s: s["axis-1"].attrs.__delitem__("navigate"), "axis-1 has no 'navigate' attribute"),
    (lambda f, s: s["axis-0"].attrs.__setitem__("scale", "wide"), "axis-0 attribute scale holds neither numbers"),
    (lambda f, s: s["axis-2"].attrs.__setitem__("units", 5), "axis-2 attribute units is not one string"),
])
def test_hspy_malformed_fields_are_named(tmp_path, damage, message):
    p = tmp_path / "bad.hspy"
    write_hspy(p, cube(shape=(3, 4, 16, 14)), extra=damage)
    with pytest.raises(qgpu.FormatError, match=message):
        qgpu.io.inspect(str(p))


def test_hspy_signal_axes_must_be_last(tmp_path):
    p = tmp_path / "t.hspy"
    write_hspy(p, cube(shape=(3, 4, 16, 14)), navigate=(False, False, True, True))
    with pytest.raises(qgpu.FormatError, match="navigation axes come first"):
        qgpu.io.inspect(str(p))


def test_hspy_without_4d_signal(tmp_path):
    p = tmp_path / "n.hspy"
    with h5py.File(p, "w") as f:
        f.attrs["file_format"] = "HyperSpy"
        f.create_group("Experiments/img").create_dataset("data", data=np.zeros((4, 4)))
    with pytest.raises(qgpu.FormatError, match="no 4D signal"):
        qgpu.io.inspect(str(p))


def emdfile_reads(path):
    """What emdfile (utils._is_EMD_file, Node/Array/Metadata.from_h5) checks and reads, done with h5py."""
    with h5py.File(path, "r") as f:
        assert f.attrs["emd_group_type"] == "file"  # a str, as emdfile compares it
        assert f.attrs["version_major"] == 1 and f.attrs["version_minor"] == 0
        roots = [k for k in f.keys() if f[k].attrs.get("emd_group_type") == "root"]
        assert roots == ["py4DSTEM_root"]
        c = f["py4DSTEM_root/metadatabundle/calibration"]
        assert c.attrs["emd_group_type"] == "metadata" and c.attrs["python_class"] == "Calibration"
        md = {}
        for k, v in c.items():  # Metadata._read_item
            t = v.attrs["type"].decode()
            md[k] = {"string": lambda: v[...].item().decode(), "number": lambda: v[...].item(),
                     "bool": lambda: v[...].item()}[t]()
        a = f["py4DSTEM_root/datacube"]
        assert a.attrs["emd_group_type"] == "array" and a.attrs["python_class"] == "DataCube"
        data = a["data"][...]
        assert a["data"].attrs["units"] == "pixel intensity"
        dims = [(a[f"dim{n}"][...], a[f"dim{n}"].attrs["name"], a[f"dim{n}"].attrs["units"]) for n in range(4)]
        assert a["dim3"].attrs["name"] != "_labels_"
        return data, md, dims


def test_convert_to_emd_is_py4dstem_layout_and_round_trips(tmp_path):
    src = tmp_path / "s.hspy"
    ref = write_hspy(src, cube(shape=(4, 6, 16, 14)), offsets=(0, 0, -8 * 0.05, -6 * 0.05))
    out = tmp_path / "out.emd"
    r = qgpu.io.convert(str(src), str(out), to="emd", backend="cpu")
    assert r["path"] == str(out)
    data, md, dims = emdfile_reads(out)
    assert np.array_equal(data, ref)
    assert md["R_pixel_size"] == pytest.approx(3.0) and md["R_pixel_units"] == "A"
    assert md["Q_pixel_size"] == pytest.approx(0.05) and md["Q_pixel_units"] == "mrad"
    assert md["QR_flip"] == False  # noqa: E712 (numpy bool)
    assert md["qx0_mean"] == pytest.approx(8.0) and md["qy0_mean"] == pytest.approx(6.0)
    assert [d[1] for d in dims] == ["Rx", "Ry", "Qx", "Qy"] and dims[0][0][1] == pytest.approx(3.0)
    back = qgpu.io.inspect(str(out))
    assert back["metadata"]["layout"] == "py4DSTEM EMD 1.0"
    # "mrad" fills its 4-byte null-padded string: read back whole (it once came back as "mra", a warning)
    assert back["metadata_warnings"] == [], back["metadata_warnings"]
    for k in ("scan_step_angstrom", "detector_mrad_per_pixel", "beam_center_row_px", "beam_center_col_px"):
        assert back["calibration"][k] == pytest.approx(r["calibration"][k]), k
    assert np.array_equal(np.asarray(qgpu.io.load(str(out), backend="cpu")), ref)


def test_convert_to_emd_with_bin_and_region(tmp_path):
    src = tmp_path / "a.emd"
    ref = write_emd(src, cube(shape=(4, 6, 12, 10), dtype="<u2"))
    out = tmp_path / "b.emd"
    qgpu.io.convert(str(src), str(out), to="emd", backend="cpu", bin_detector=2)
    want = np.asarray(qgpu.io.load(str(src), backend="cpu", bin_detector=2))
    assert np.array_equal(np.asarray(qgpu.io.load(str(out), backend="cpu")), want)
    cal = qgpu.io.inspect(str(out))["calibration"]
    assert cal["detector_mrad_per_pixel"] == pytest.approx(1.6) and cal["scan_step_angstrom"] == pytest.approx(5.0)
    assert ref.shape == (4, 6, 12, 10)


def test_cli_convert_to_emd(tmp_path, qgpu_bin=None):
    import os
    exe = os.environ.get("QGPU_BIN")
    if not exe:
        pytest.skip("QGPU_BIN not set")
    src = tmp_path / "a.emd"
    ref = write_emd(src, cube())
    out = tmp_path / "c.emd"
    subprocess.run([exe, "convert", str(src), str(out), "--to", "emd", "--backend", "cpu"], check=True,
                   capture_output=True)
    data, md, _ = emdfile_reads(out)
    assert np.array_equal(data, ref) and md["R_pixel_units"] == "A"


def test_python_write_tiff_and_products_emd(tmp_path):
    from PIL import Image
    img = (np.arange(35, dtype=np.float32).reshape(5, 7) - 3.5) * 0.25
    p = qgpu.io.write_tiff(tmp_path / "a.tif", img, pixel_size=0.05, unit="nm")
    im = Image.open(p)
    assert im.mode == "F" and im.size == (7, 5)
    assert np.array_equal(np.asarray(im), img)
    assert "unit=nm" in im.tag_v2[270]
    assert float(im.tag_v2[282]) == pytest.approx(20.0)  # pixels per nm
    out = qgpu.io.write_products_emd(tmp_path / "p.emd", {"bf": img, "pattern": (img.T.copy(), 0.5, "mrad")},
                                     calibration={"scan_step_angstrom": 0.5, "detector_mrad_per_pixel": 0.5})
    with h5py.File(out, "r") as f:
        r = f["quantem_products"]
        assert np.array_equal(r["bf/data"][...], img) and r["bf/dim0"].attrs["units"] == "pixels"
        assert np.array_equal(r["pattern/data"][...], img.T) and r["pattern/dim1"].attrs["units"] == "mrad"
        assert r["metadatabundle/calibration/Q_pixel_units"][()] == b"mrad"


@requires_cuda
def test_emd_and_hspy_load_on_cuda(tmp_path):
    p = tmp_path / "g.emd"
    ref = write_emd(p, cube(shape=(4, 6, 16, 14)))
    ds = qgpu.io.load(str(p), backend="cuda")
    assert ds.provenance["parameters"]["codec"] == "plain"
    assert np.array_equal(np.asarray(ds), ref)
    b = np.asarray(qgpu.io.load(str(p), backend="cuda", bin_detector=2, scan_region=(1, 0, 2, 6)))
    assert np.array_equal(b, ref[1:3].reshape(2, 6, 8, 2, 7, 2).sum(axis=(3, 5)))
    h = tmp_path / "g.hspy"
    ref = write_hspy(h, cube(shape=(3, 4, 16, 14), dtype="<f4"))
    assert np.array_equal(np.asarray(qgpu.io.load(str(h), backend="cuda")), ref)


def test_emd_other_version_reads_with_a_dataset_path(tmp_path):
    p = tmp_path / "v0.emd"
    ref = write_emd(p, cube(), major=0)
    with pytest.raises(qgpu.FormatError, match="version_major is 0.0; read is EMD 1.0.*give dataset_path"):
        qgpu.io.inspect(str(p))
    got = np.asarray(qgpu.io.load(str(p), backend="cpu", dataset="/py4DSTEM_root/datacube/data"))
    assert np.array_equal(got, ref)
