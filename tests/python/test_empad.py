"""The EMPAD reader against numpy: .xml + .raw acquisitions written here per the format (little-endian float32
frames of 130 x 128, the last 2 rows a footer; the xml names the raw file and the scan size), independent of our
writer, load exactly as np.fromfile(...).reshape(-1, 130, 128)[:, :128]; the scan shape from the xml (acquire,
search, pix_x/pix_y), from an EMPAD v1.2.2 raw name scan_x<X>_y<Y>.raw, or given; clear errors; and the
`qgpu sample --format empad` writer. cpu here, cuda where a GPU is usable."""
import os
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu
from conftest import requires_cuda

RECORD = 130 * 128 * 4


def frames(n, seed=0):
    """n EMPAD records (130 x 128 float32): background-subtracted values (negative ones too), a bright disk,
    footer rows that must not load."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.5, 2.0, size=(n, 130, 128)).astype("<f4")
    a[:, 56:72, 56:72] += 300.0
    a[:, 128:, :] = np.arange(n, dtype="<f4")[:, None, None] + 1e6  # the footer
    return a


def write_raw(path, a):
    a.astype("<f4").tofile(path)
    return np.fromfile(path, dtype="<f4").reshape(-1, 130, 128)[:, :128]


def xml_text(raw_name, acquire=None, search=None, pix=None, series=None, extra=""):
    def scan(mode, shape):
        rows, cols = shape
        return (f'<scan_parameters mode="{mode}"><scan_size>0.6</scan_size>'
                f"<scan_resolution_y>{rows}</scan_resolution_y><scan_resolution_x>{cols}</scan_resolution_x>"
                f"</scan_parameters>")
    body = f'<timestamp timestamp="1" isoformat="2026-03-25T16:47:52"/><raw_file filename="{raw_name}"/>'
    if search:
        body += scan("search", search)
    if acquire:
        body += scan("acquire", acquire)
    if pix:
        body += f"<pix_x>{pix[1]}</pix_x><pix_y>{pix[0]}</pix_y>"
    if series:
        body += f"<scan_parameters><series_count>{series}</series_count></scan_parameters>"
    return f'<?xml version="1.0"?>\n<root name="t">{body}{extra}</root>\n'


def test_formats_lists_empad():
    by_name = {f["name"]: f for f in qgpu.io.formats()}
    assert by_name["empad"]["recognised_by_content"] is True


@pytest.mark.parametrize("where", ["acquire", "search", "pix"])
def test_xml_scan_shape_loads_exactly(tmp_path, where):
    ref = write_raw(tmp_path / "data.raw", frames(4 * 6, seed=1))
    shape = (4, 6)
    kw = {"acquire": {"acquire": shape}, "search": {"search": shape}, "pix": {"pix": shape}}[where]
    xml = tmp_path / "acq.xml"
    xml.write_text(xml_text("data.raw", **kw))
    info = qgpu.io.inspect(str(xml))
    assert info["reader"] == "empad" and info["shape"] == [4, 6, 128, 128]
    assert info["dtype"] == "float32"
    assert where in info["scan_shape_source"] if where != "pix" else "pix_y x pix_x" in info["scan_shape_source"]
    ds = qgpu.io.load(str(xml), backend="cpu")
    out = np.asarray(ds)
    assert out.dtype == np.float32 and out.shape == (4, 6, 128, 128)
    assert np.array_equal(out, ref.reshape(4, 6, 128, 128))
    assert ds.provenance["parameters"]["format"] == "empad"
    mask = np.zeros((128, 128), bool)
    mask[50:80, 50:80] = True
    vi = qgpu.detector.virtual_image(ds, mask)
    assert vi.dtype == np.float64
    np.testing.assert_allclose(vi, ref.reshape(4, 6, 128, 128)[..., 50:80, 50:80].astype(np.float64).sum(axis=(-2, -1)),
                               rtol=1e-12)


def test_acquire_not_matching_falls_back_to_search_with_a_warning(tmp_path):
    ref = write_raw(tmp_path / "d.raw", frames(3 * 5, seed=2))
    xml = tmp_path / "a.xml"
    xml.write_text(xml_text("d.raw", acquire=(8, 8), search=(3, 5)))
    info = qgpu.io.inspect(str(xml))
    assert info["shape"] == [3, 5, 128, 128] and 'mode="search"' in info["scan_shape_source"]
    assert any("does not match" in w for w in info["warnings"])
    assert np.array_equal(np.asarray(qgpu.io.load(str(xml), backend="cpu")), ref.reshape(3, 5, 128, 128))


def test_v122_raw_name_and_the_raw_itself(tmp_path):
    # EMPAD v1.2.2: the scan size in the raw name (x = cols, y = rows); the xml may say it too.
    ref = write_raw(tmp_path / "scan_x3_y2.raw", frames(6, seed=3)).reshape(2, 3, 128, 128)
    xml = tmp_path / "v122.xml"
    xml.write_text(xml_text("scan_x3_y2.raw"))  # no scan parameters: the name decides
    info = qgpu.io.inspect(str(xml))
    assert info["shape"] == [2, 3, 128, 128] and "scan_x<X>_y<Y>" in info["scan_shape_source"]
    assert np.array_equal(np.asarray(qgpu.io.load(str(xml), backend="cpu")), ref)
    # The .raw itself (no magic bytes: named with format="empad").
    raw = str(tmp_path / "scan_x3_y2.raw")
    assert np.array_equal(np.asarray(qgpu.io.load(raw, backend="cpu", format="empad")), ref)
    # Given: wins over the name.
    ds = qgpu.io.load(raw, backend="cpu", format="empad", scan_shape=(3, 2))
    assert np.array_equal(np.asarray(ds), ref.reshape(3, 2, 128, 128))


def test_absolute_raw_path_in_xml_and_given_scan_shape_for_a_stack(tmp_path):
    ref = write_raw(tmp_path / "stack.raw", frames(6, seed=4))
    xml = tmp_path / "stack.xml"
    xml.write_text(xml_text("/home/empad/projects/1/stack.raw", series=6))  # copied off the instrument
    with pytest.raises(qgpu.FormatError, match="6 frames"):  # a stack of 6: not square, the scan shape is needed
        qgpu.io.load(str(xml), backend="cpu")
    info = qgpu.io.inspect(str(xml))
    assert info["shape"] is None and info["frames"] == 6
    ds = qgpu.io.load(str(xml), backend="cpu", scan_shape=(2, 3))
    assert np.array_equal(np.asarray(ds), ref.reshape(2, 3, 128, 128))
    xml.write_text(xml_text("C:\\EMPAD\\data\\stack.raw", pix=(3, 2)))  # a Windows path
    assert np.array_equal(np.asarray(qgpu.io.load(str(xml), backend="cpu")), ref.reshape(3, 2, 128, 128))


def test_nan_is_zeroed_and_counted(tmp_path):
    a = frames(4, seed=5)
    a[1, 10, 20] = np.nan
    a[3, 127, 0] = np.inf
    a[2, 128, 5] = np.nan  # in the footer: never loaded, never counted
    ref = write_raw(tmp_path / "n.raw", a)
    (tmp_path / "n.xml").write_text(xml_text("n.raw", acquire=(2, 2)))
    ds = qgpu.io.load(str(tmp_path / "n.xml"), backend="cpu")
    assert ds.provenance["parameters"]["nonfinite_values"] == 2
    assert np.array_equal(np.asarray(ds), np.nan_to_num(ref, nan=0, posinf=0).reshape(2, 2, 128, 128))


def test_calibration_from_the_xml(tmp_path):
    write_raw(tmp_path / "c.raw", frames(4))
    (tmp_path / "c.xml").write_text(xml_text("c.raw", acquire=(2, 2), extra=(
        "<iom_measurements><nominal_camera_length>0.369</nominal_camera_length>"
        "<high_voltage>300000.0</high_voltage></iom_measurements>")))
    info = qgpu.io.inspect(str(tmp_path / "c.xml"))
    cal = info["calibration_detail"]
    assert cal["energy_kev"]["value"] == 300.0 and cal["energy_kev"]["unit"] == "keV"
    assert "high_voltage" in cal["energy_kev"]["source"]
    assert cal["camera_length_m"]["value"] == 0.369 and cal["camera_length_m"]["unit"] == "m"
    assert info["metadata"]["timestamp"] == "2026-03-25T16:47:52"


def test_errors_name_the_file_and_field(tmp_path):
    xml = tmp_path / "e.xml"
    xml.write_text(xml_text("e.raw", acquire=(2, 3)))
    with pytest.raises(qgpu.IoError, match=r"e\.raw.*root/raw_file@filename.*does not exist"):
        qgpu.io.load(str(xml), backend="cpu")
    xml.write_text(xml_text("/elsewhere/e.raw", acquire=(2, 3)))
    with pytest.raises(qgpu.IoError, match=r"'/elsewhere/e\.raw' nor '.*/e\.raw' does not exist"):
        qgpu.io.load(str(xml), backend="cpu")
    xml.write_text(xml_text("e.raw", acquire=(2, 3)))
    (tmp_path / "e.raw").write_bytes(b"\0" * (RECORD * 6 - 4))
    with pytest.raises(qgpu.FormatError, match=rf"{RECORD * 6 - 4} bytes, not a whole number of EMPAD frames of "
                                               rf"{RECORD} bytes"):
        qgpu.io.load(str(xml), backend="cpu")
    (tmp_path / "e.raw").write_bytes(b"\0" * (RECORD * 5))
    with pytest.raises(qgpu.FormatError, match=r"holds 5 frames.*2 x 3 = 6 frames"):
        qgpu.io.load(str(xml), backend="cpu")
    with pytest.raises(qgpu.FormatError, match="needs 6 frames"):
        qgpu.io.load(str(xml), backend="cpu", scan_shape=(3, 2))
    xml.write_text(xml_text("e.raw", acquire=(2, 3)).replace("</scan_resolution_x>", ""))
    with pytest.raises(qgpu.FormatError, match=r"e\.xml.*malformed XML"):
        qgpu.io.load(str(xml), backend="cpu")
    xml.write_text('<root><timestamp isoformat="x"/><raw_file name="e.raw"/></root>')
    with pytest.raises(qgpu.FormatError, match=r"e\.xml.*root/raw_file@filename"):
        qgpu.io.load(str(xml), backend="cpu")
    xml.write_text('<root><timestamp isoformat="x"/><raw_file filename="e.raw"/><pix_x>5</pix_x><pix_y>-1</pix_y>'
                   "</root>")
    with pytest.raises(qgpu.FormatError, match=r"root/pix_y is '-1', not a positive integer"):
        qgpu.io.load(str(xml), backend="cpu")


def test_sample_writer(tmp_path):
    out = str(tmp_path / "s.xml")
    subprocess.run([os.environ["QGPU_BIN"], "sample", out, "--format", "empad", "--scan", "3", "4", "--seed", "7",
                    "--nan", "2"], check=True, capture_output=True)
    raw = tmp_path / "s.raw"
    assert raw.stat().st_size == 12 * RECORD
    numpy_view = np.fromfile(raw, dtype="<f4").reshape(-1, 130, 128)
    assert np.array_equal(numpy_view[:, 128, 0], np.arange(12, dtype=np.float32))  # footer: the frame index
    assert np.isnan(numpy_view[:, :128]).sum() == 2
    ds = qgpu.io.load(out, backend="cpu")
    assert ds.provenance["parameters"]["nonfinite_values"] == 2
    assert np.array_equal(np.asarray(ds), np.nan_to_num(numpy_view[:, :128], nan=0).reshape(3, 4, 128, 128))


@requires_cuda
def test_cuda_equals_cpu(tmp_path):
    a = frames(6, seed=8)
    a[2, 3, 4] = np.nan
    write_raw(tmp_path / "g.raw", a)
    (tmp_path / "g.xml").write_text(xml_text("g.raw", acquire=(2, 3)))
    cpu = np.asarray(qgpu.io.load(str(tmp_path / "g.xml"), backend="cpu"))
    gpu = qgpu.io.load(str(tmp_path / "g.xml"), backend="cuda")
    assert np.array_equal(np.asarray(gpu), cpu)
    assert gpu.provenance["parameters"]["nonfinite_values"] == 1
