"""Gatan DigitalMicrograph DM3 / DM4: `qgpu sample --format dm3|dm4` files read by qgpu.io.load against an
independent reading of the format in numpy, written here from the specification (big-endian header and tag
structure, DM4 64-bit sizes, tag groups, typed arrays; values in the header's byte order): every dtype, both byte
orders, the 4D image chosen over the thumbnail, the scan and detector shape from Dimensions, the calibration; the old
transposed layout read (the detector pixel slowest) and float64 there refused; every malformed header field a FormatError naming it; a DM4 converted to HDF5 exactly."""
import os
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu

SIMPLE = {2: "i2", 3: "i4", 4: "u2", 5: "u4", 6: "f4", 7: "f8", 8: "u1", 9: "i1", 10: "u1", 11: "i8", 12: "u8"}
IMAGE_DTYPE = {1: "i2", 2: "f4", 6: "u1", 7: "i4", 9: "i1", 10: "u2", 11: "u4", 12: "f8"}


class DMFile:
    """The spec, read independently: tags by '/'-joined path (unnamed tags by their index in their group)."""

    def __init__(self, raw):
        self.b = raw
        self.version = int.from_bytes(raw[0:4], "big")
        self.w = 8 if self.version == 4 else 4
        self.length = int.from_bytes(raw[4:4 + self.w], "big")
        self.little = int.from_bytes(raw[4 + self.w:8 + self.w], "big") == 1
        self.e = "<" if self.little else ">"
        self.pos = 8 + self.w
        self.tags, self.at = {}, {}  # at: where each tag starts, and each value ('path@value')
        self.group("")

    def u(self, n):
        v = int.from_bytes(self.b[self.pos:self.pos + n], "big")
        self.pos += n
        return v

    def group(self, prefix):
        self.pos += 2  # sorted, open
        for i in range(self.u(self.w)):
            start = self.pos
            kind, name_len = self.u(1), self.u(2)
            name = self.b[self.pos:self.pos + name_len].decode("latin-1")
            self.pos += name_len
            if self.version == 4:
                self.pos += 8  # the tag's size
            path = prefix + (name or str(i))
            self.at[path] = start
            if kind == 20:
                self.tags[path] = "group"
                self.group(path + "/")
            else:
                assert kind == 21 and self.b[self.pos:self.pos + 4] == b"%%%%"
                self.pos += 4
                info = [self.u(self.w) for _ in range(self.u(self.w))]
                self.at[path + "@value"] = self.pos
                if info[0] in SIMPLE:
                    dt = np.dtype(self.e + SIMPLE[info[0]])
                    self.tags[path] = np.frombuffer(self.b, dt, 1, self.pos)[0]
                    self.pos += dt.itemsize
                else:
                    assert info[0] == 20 and info[1] in SIMPLE and len(info) == 3
                    dt = np.dtype(self.e + SIMPLE[info[1]])
                    a = np.frombuffer(self.b, dt, info[2], self.pos)
                    self.tags[path] = ("".join(map(chr, a)) if info[1] == 4 and not path.endswith("/Data")
                                      else (dt, info[2], self.pos))
                    self.pos += dt.itemsize * info[2]

    def image(self, i):
        p = f"ImageList/{i}/ImageData/"
        dims = []
        while f"{p}Dimensions/{len(dims)}" in self.tags:
            dims.append(int(self.tags[f"{p}Dimensions/{len(dims)}"]))
        dt, count, offset = self.tags[p + "Data"]
        stored = np.dtype(self.e + IMAGE_DTYPE[int(self.tags[p + "DataType"])])
        assert stored.itemsize == dt.itemsize and count == np.prod(dims)
        return np.frombuffer(self.b, stored, count, offset).reshape(dims[::-1]), dims


def run_qgpu(*args, check=True):
    return subprocess.run([os.environ["QGPU_BIN"], *map(str, args)], check=check, capture_output=True, text=True)


def write_dm(path, version=4, dtype="uint16", order="little", scan=(5, 4), det=(20, 18), extra=()):
    run_qgpu("sample", path, "--format", f"dm{version}", "--dtype", dtype, "--byte-order", order, "--scan",
             *scan, "--detector", *det, *extra)
    return DMFile(path.read_bytes())


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("dtype,order", [("uint8", "little"), ("uint16", "little"), ("uint16", "big"),
                                         ("uint32", "little"), ("int8", "little"), ("int16", "big"),
                                         ("int32", "little"), ("float32", "little"), ("float32", "big"),
                                         ("float64", "little")])
def test_every_dtype_and_byte_order_loads_like_numpy(tmp_path, version, dtype, order):
    path = tmp_path / f"scan.dm{version}"
    dm = write_dm(path, version, dtype, order)
    assert dm.version == version and dm.little == (order == "little")
    ref, dims = dm.image(1)  # ImageList/0 is the 16 x 16 thumbnail
    assert dims == [18, 20, 4, 5] and dm.image(0)[1] == [16, 16]
    assert bool(dm.tags["ImageList/1/ImageTags/Meta Data/Data Order Swapped"])
    info = qgpu.io.inspect(str(path))
    assert info["reader"] == "dm" and info["shape"] == [5, 4, 20, 18] and info["codec"] == "plain"
    assert info["scan_shape_source"] == "dataset dims"
    assert info["byte_order"] == ("big" if order == "big" and ref.dtype.itemsize > 1 else "little")
    ds = qgpu.io.load(str(path), backend="cpu")
    out = np.asarray(ds)
    expect = ref.astype(np.float32) if dtype == "float64" else ref
    assert out.dtype == expect.dtype.newbyteorder("=") and np.array_equal(out, expect)
    if dtype.startswith("float"):
        assert (out < 0).any()  # the writer's floats go negative: read as floats, not counts
    if dtype in ("int16", "float32"):
        ds2 = qgpu.io.load(str(path), backend="cpu", scan_region=(1, 1, 4, 2), detector_region=(2, 3, 16, 12),
                           bin_detector=2)
        cut = expect[1:5, 1:3, 2:18, 3:15].reshape(4, 2, 8, 2, 6, 2)
        summed = cut.astype(np.float64 if dtype == "float32" else np.int64).sum(axis=(3, 5))
        assert np.array_equal(np.asarray(ds2), summed.astype(np.asarray(ds2).dtype))


def test_same_counts_as_the_h5_sample_and_calibration(tmp_path):
    h5 = tmp_path / "s.h5"
    qgpu.io.write_sample(str(h5), scan=(5, 4), detector=(20, 18), dtype="uint16", seed=1)
    ref = np.asarray(qgpu.io.load(str(h5), backend="cpu"))
    cal = qgpu.io.inspect(str(h5))["calibration"]
    for version in (3, 4):
        path = tmp_path / f"s.dm{version}"
        dm = write_dm(path, version)
        assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu")), ref)
        info = qgpu.io.inspect(str(path))
        c = info["calibration"]
        d = "ImageList/1/ImageData/Calibrations/Dimension/"
        assert dm.tags[d + "2/Units"] == "nm"
        assert c["scan_step_angstrom"] == pytest.approx(float(dm.tags[d + "2/Scale"]) * 10, rel=1e-12)
        assert c["scan_step_angstrom"] == pytest.approx(cal["scan_step_angstrom"], rel=1e-6)  # float32 Scale
        assert c["energy_kev"] == float(dm.tags["ImageList/1/ImageTags/Microscope Info/Voltage"]) / 1e3 == 300
        if version == 3:
            assert dm.tags[d + "0/Units"] == "mrad"
            assert c["detector_mrad_per_pixel"] == pytest.approx(float(dm.tags[d + "0/Scale"]), rel=1e-12)
        else:  # 1/nm x the electron wavelength (300 kV: 1.9687 pm)
            assert dm.tags[d + "0/Units"] == "1/nm"
            mrad = float(dm.tags[d + "0/Scale"]) * 1.96875e-3 * 1e3
            assert c["detector_mrad_per_pixel"] == pytest.approx(mrad, rel=1e-4)
        assert c["detector_mrad_per_pixel"] == pytest.approx(cal["detector_mrad_per_pixel"], rel=1e-6)
        assert "Calibrations" in info["calibration_detail"]["scan_step_angstrom"]["source"]


@pytest.mark.parametrize("version,dtype,order", [(4, "uint16", "little"), (3, "int16", "big"), (4, "float32", "big"),
                                                 (3, "uint8", "little")])
def test_old_transposed_layout_loads_like_numpy(tmp_path, version, dtype, order):
    path = tmp_path / f"old.dm{version}"
    dm = write_dm(path, version, dtype, order, extra=("--dm-transposed",))
    ref, dims = dm.image(1)  # indexed [dr, dc, sr, sc]: the scan column varies fastest
    assert dims == [4, 5, 18, 20] and "ImageList/1/ImageTags/Meta Data/Data Order Swapped" not in dm.tags
    expect = ref.transpose(2, 3, 0, 1)
    new, _ = write_dm(tmp_path / f"new.dm{version}", version, dtype, order).image(1)
    assert np.array_equal(expect, new)  # the same frames as the frame-contiguous file
    info = qgpu.io.inspect(str(path))
    assert info["shape"] == [5, 4, 20, 18] and "old transposed layout" in info["source_kind"]
    assert info["calibration"] == qgpu.io.inspect(str(tmp_path / f"new.dm{version}"))["calibration"]
    ds = qgpu.io.load(str(path), backend="cpu")
    assert ds.provenance["parameters"]["layout"] == "detector_pixel_slowest"
    assert np.array_equal(np.asarray(ds), expect)
    # Regions (detector rows cut: slabs of whole rows; columns cut: a slab per row), binning, encoded.
    kw = dict(scan_region=(1, 0, 4, 4), detector_region=(2, 3, 16, 12))
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu", **kw)), expect[1:5, 0:4, 2:18, 3:15])
    kw = dict(detector_region=(2, 0, 16, 18))
    assert np.array_equal(np.asarray(qgpu.io.load(str(path), backend="cpu", **kw)), expect[:, :, 2:18])
    if dtype in ("uint16", "uint8"):
        b = np.asarray(qgpu.io.load(str(path), backend="cpu", bin_detector=2, scan_region=(0, 0, 4, 4), bin_scan=2))
        ref_b = expect[:4, :4].astype(np.uint64).reshape(2, 2, 2, 2, 10, 2, 9, 2).sum(axis=(1, 3, 5, 7))
        assert np.array_equal(b, ref_b)
        enc = qgpu.io.load(str(path), backend="cpu", representation="encoded")
        assert enc.representation == "encoded" and np.array_equal(np.asarray(enc), expect)


def test_old_layout_float64_is_refused(tmp_path):
    path = tmp_path / "old64.dm4"
    write_dm(path, 4, "float64", extra=("--dm-transposed",))
    with pytest.raises(qgpu.DTypeError, match="float64 in the old transposed layout"):
        qgpu.io.load(str(path), backend="cpu")


def patched(tmp_path, raw, at, new, name="bad.dm4"):
    b = bytearray(raw)
    b[at:at + len(new)] = new
    p = tmp_path / name
    p.write_bytes(bytes(b))
    return str(p)


@pytest.mark.parametrize("version", [3, 4])
def test_malformed_fields_are_format_errors(tmp_path, version):
    path = tmp_path / f"g.dm{version}"
    dm = write_dm(path, version, scan=(3, 2), det=(8, 8))
    raw = path.read_bytes()
    w = dm.w
    data = "ImageList/1/ImageData/Data"
    dims0 = "ImageList/1/ImageData/Dimensions/0"
    name_end = dm.at[data] + 3 + len("Data") + (8 if version == 4 else 0)

    def refused(p, *needles):
        with pytest.raises(qgpu.FormatError) as e:
            qgpu.io.load(p, backend="cpu", format="dm")
        for n in needles:
            assert n in str(e.value), str(e.value)

    refused(patched(tmp_path, raw, 0, (5).to_bytes(4, "big")), "DM version 5")
    refused(patched(tmp_path, raw, 4 + w, (2).to_bytes(4, "big")), "byte order flag 2")
    refused(patched(tmp_path, raw, 4, (len(raw) + 100).to_bytes(w, "big")), "truncated")
    refused(patched(tmp_path, raw, name_end, b"%%%#"), "'%%%%' delimiter", data)
    refused(patched(tmp_path, raw, dm.at[data], bytes([22])), "kind 22")
    refused(patched(tmp_path, raw, name_end + 4, (0).to_bytes(w, "big")), "info array of 0 words")
    refused(patched(tmp_path, raw, name_end + 4 + w, (99).to_bytes(w, "big")), "unknown type 99")
    refused(patched(tmp_path, raw, name_end + 4 + 2 * w, (33).to_bytes(w, "big")), "array of unknown type 33")
    huge = (1 << 62) if version == 4 else (1 << 31)
    refused(patched(tmp_path, raw, name_end + 4 + 3 * w, huge.to_bytes(w, "big")), data)
    refused(patched(tmp_path, raw, 8 + w + 2, (1 << (8 * w - 2)).to_bytes(w, "big")), "tags, more than")
    # A dimension that does not match the data, a zero dimension, an unreadable DataType.
    e = "<" if dm.little else ">"
    refused(patched(tmp_path, raw, dm.at[dims0 + "@value"], np.array(9, e + "u4").tobytes()), "Dimensions give")
    refused(patched(tmp_path, raw, dm.at[dims0 + "@value"], np.array(0, e + "u4").tobytes()), "Dimensions[0]")
    with pytest.raises(qgpu.DTypeError, match="complex64"):
        qgpu.io.load(patched(tmp_path, raw, dm.at["ImageList/1/ImageData/DataType@value"],
                             np.array(3, e + "u4").tobytes()), backend="cpu")
    # Cut anywhere inside the tag tree: a FormatError, never a crash or a hang.
    for cut in range(20, len(raw) - 8 - 3 * 2 * 8 * 8, 97):
        if dm.at[data + "@value"] <= cut < dm.at[data + "@value"] + 3 * 2 * 64 * 2:
            continue
        p = tmp_path / "cut.dm"
        p.write_bytes(raw[:cut])
        with pytest.raises((qgpu.FormatError, qgpu.IoError)):
            qgpu.io.load(str(p), backend="cpu", format="dm")


def test_recognised_by_content_and_listed(tmp_path):
    path = tmp_path / "no_extension"
    write_dm(path, 3)
    assert qgpu.io.inspect(str(path))["reader"] == "dm"
    assert "dm" in [f["name"] for f in qgpu.io.formats()]


def test_dm4_converts_to_hdf5_exactly(tmp_path):
    path = tmp_path / "s.dm4"
    write_dm(path, 4, "int16", "big")
    out = tmp_path / "s.h5"
    r = qgpu.io.convert(str(path), str(out), backend="cpu")
    a = np.asarray(qgpu.io.load(str(path), backend="cpu"))
    for decoder in ("quantem", "hdf5"):
        assert np.array_equal(np.asarray(qgpu.io.load(str(out), backend="cpu", decoder=decoder)), a)
    assert qgpu.io.inspect(str(out))["calibration"] == pytest.approx(r["calibration"])
    assert r["calibration"]["scan_step_angstrom"] == qgpu.io.inspect(str(path))["calibration"]["scan_step_angstrom"]


def dm_bytes(version, little, images):
    """A DM file written here from the spec (independent of our writer): ImageList of (array, tags) images, each
    array's axes reversed into Dimensions (fastest first); tags: {path: value} under ImageTags."""
    w = 8 if version == 4 else 4
    e = "<" if little else ">"

    def be(v, n):
        return int(v).to_bytes(n, "big")

    def tag(name, content, group):
        return bytes([20 if group else 21]) + be(len(name), 2) + name.encode() + (be(len(content), 8) if w == 8
                                                                                   else b"") + content

    def group(name, tags):
        return tag(name, b"\x00\x00" + be(len(tags), w) + b"".join(tags), True)

    def data(name, info, payload):
        return tag(name, b"%%%%" + be(len(info), w) + b"".join(be(i, w) for i in info) + payload, False)

    codes = {"u1": (6, 10), "u2": (10, 4), "i2": (1, 2), "f4": (2, 6), "u4": (11, 5)}
    entries = []
    for a, tags in images:
        dt, el = codes[a.dtype.str[1:]]
        dims = [data("", [5], np.array(d, e + "u4").tobytes()) for d in a.shape[::-1]]
        meta = [data(k, [8], bytes([v])) for k, v in tags.items()]
        entries.append(group("", [group("ImageData", [data("Data", [20, el, a.size], a.astype(a.dtype.newbyteorder(e)).tobytes()),
                                                      data("DataType", [5], np.array(dt, e + "u4").tobytes()),
                                                      group("Dimensions", dims)]),
                                  group("ImageTags", [group("Meta Data", meta)])]))
    root = b"\x01\x00" + be(1, w) + group("ImageList", entries)
    return be(version, 4) + be(len(root), w) + be(1 if little else 0, 4) + root + bytes(8)


@pytest.mark.parametrize("version,little", [(3, True), (4, False)])
def test_files_written_from_the_spec_here(tmp_path, version, little):
    rng = np.random.default_rng(version)
    stack = rng.integers(0, 60000, size=(12, 7, 9)).astype("u2")  # 3D: frames x rows x cols
    small = rng.integers(0, 255, size=(2, 2, 7, 9)).astype("u1")  # a smaller 4D image before it
    p = tmp_path / "stack.dm"
    p.write_bytes(dm_bytes(version, little, [(np.zeros((4, 4), "u1"), {}), (small, {"Data Order Swapped": 1}),
                                             (stack, {})]))
    info = qgpu.io.inspect(str(p))
    assert info["reader"] == "dm" and info["shape"] is None and info["frames"] == 12  # 12 frames: not square
    assert info["metadata"]["image"] == "ImageList/2"  # the largest 3D / 4D image
    out = np.asarray(qgpu.io.load(str(p), backend="cpu", scan_shape=(3, 4)))
    assert np.array_equal(out, stack.reshape(3, 4, 7, 9))
    # The 4D image alone, its scan shape from Dimensions; float32 values.
    f = rng.normal(size=(3, 5, 6, 4)).astype("f4")
    p.write_bytes(dm_bytes(version, little, [(f, {"Data Order Swapped": 1})]))
    ds = qgpu.io.load(str(p), backend="cpu")
    assert ds.shape == (3, 5, 6, 4) and np.array_equal(np.asarray(ds), f)
