"""Our Merlin reader (header parser, scan, host decoder: merlin_dump) against an independent numpy reading
(merlin_numpy.py) of the 40 real files of Merlin_Single_Quad.zip and of `qgpu sample --format mib` files of every
counter depth, single/quad, binary/raw: byte for byte. The numpy reader is itself checked against known facts.
Run by ctest (io.merlin_numpy) with MERLIN_DUMP, QGPU, QGPU_TEST_TMP and MERLIN_ZIP set."""
import glob
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import merlin_numpy as mn  # noqa: E402

HERE = os.path.dirname(__file__)
DUMP = os.environ.get("MERLIN_DUMP", os.path.join(HERE, "../../../build/tests/io/merlin_dump"))
QGPU = os.environ.get("QGPU", os.path.join(HERE, "../../../build/qgpu"))
TMP = os.environ.get("QGPU_TEST_TMP", "/tmp/qgpu-test")
ZIP = os.environ.get("MERLIN_ZIP", os.path.join(HERE, "../../../../shared/data/merlin/Merlin_Single_Quad.zip"))


@pytest.fixture(scope="session")
def real_dir():
    if not os.path.exists(ZIP):
        pytest.skip(f"real Merlin files not here ({ZIP})")
    d = os.path.join(TMP, "merlin_real")
    os.makedirs(d, exist_ok=True)
    with zipfile.ZipFile(ZIP) as z:
        z.extractall(d)
    return d


def real_files(d):
    return sorted(glob.glob(os.path.join(d, "*.mib")))


def dump(path, out, *scan):
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([DUMP, path, out, *map(str, scan)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return None, r.stdout + r.stderr
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    return (np.load(os.path.join(out, "frames.npy")), meta), r.stdout


# -- the numpy reader against facts known about the real files (FORMATS.md section 1) --

def test_numpy_reader_facts(real_dir):
    p = os.path.join(real_dir, "Single_1_Frame_CounterDepth_12_Rows_256.mib")
    data = open(p, "rb").read()
    assert len(data) == 384 + 256 * 256 * 2 == 131456
    _, frames = mn.read_mib(p)
    assert frames.dtype == np.uint16 and int(frames.max()) == 2239  # big-endian
    assert int(np.frombuffer(data[384:], "<u2").max()) == 48904      # what little-endian would give
    sizes = {"Quad_1_Frame_CounterDepth_12_Rows_256.mib": 525056, "Quad_1_Frame_CounterDepth_1_Rows_256RAW.mib": 33536,
             "Single_1_Frame_CounterDepth_24_Rows_256.mib": 262528}
    for name, size in sizes.items():
        assert os.path.getsize(os.path.join(real_dir, name)) == size
    for depth, top in ((1, 1), (6, 63)):
        for kind in ("Single", "Quad"):
            _, fr = mn.read_mib(os.path.join(real_dir, f"{kind}_9_Frame_CounterDepth_{depth}_Rows_256.mib"))
            assert fr.dtype == np.uint8 and int(fr.max()) == top
    h, fr = mn.read_mib(os.path.join(real_dir, "Quad_9_Frame_CounterDepth_1_Rows_256RAW.mib"))
    assert fr.shape == (9, 512, 512) and h[0]["width"] == 1024 and h[0]["height"] == 256
    assert int(fr.sum()) == 92621  # one count per set bit of the payloads


def corr(a, b):
    a = a - a.mean()
    b = b - b.mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


@pytest.mark.parametrize("kind", ["Single", "Quad"])
def test_numpy_raw_unscrambling_matches_binary_mode(real_dir, kind):
    """The raw 1-bit acquisition decoded (groups reversed, quad chips reordered and flipped) shows the same detector
    response as the binary 1-bit acquisition taken minutes apart: mean patterns correlate > 0.99, and a flip of
    either axis (a wrong quad assembly) falls below 0.6."""
    _, raw = mn.read_mib(os.path.join(real_dir, f"{kind}_9_Frame_CounterDepth_1_Rows_256RAW.mib"))
    _, binary = mn.read_mib(os.path.join(real_dir, f"{kind}_9_Frame_CounterDepth_1_Rows_256.mib"))
    r, b = raw.mean(0).astype(float), binary.mean(0).astype(float)
    assert corr(r, b) > 0.99
    assert corr(r[::-1], b) < 0.6 and corr(r[:, ::-1], b) < 0.6


# -- ours against the numpy reader --

HEADER_KEYS = ["sequence", "header_bytes", "chips", "width", "height", "pixel_type", "chip_select", "timestamp",
               "shutter_s", "counter", "colour_mode", "gain_mode", "thresholds_kev", "timestamp_ns", "exposure_ns",
               "counter_depth", "dac_blocks"]


def compare(path, ours, meta):
    headers, frames = mn.read_mib(path)
    assert ours.dtype == frames.dtype, (ours.dtype, frames.dtype)
    assert ours.shape == frames.shape
    assert ours.tobytes() == frames.tobytes()
    assert len(meta["headers"]) == len(headers)
    for h_ours, h_np in zip(meta["headers"], headers):
        for k in HEADER_KEYS:
            assert h_ours[k] == h_np[k], (k, h_ours[k], h_np[k])
        assert h_ours["layout"] == h_np["layout"]


def test_every_real_file_decodes_exactly(real_dir, tmp_path):
    files = real_files(real_dir)
    assert len(files) == 20  # + 20 .hdr
    for p in files:
        name = os.path.basename(p)[:-4]
        res, log = dump(p, str(tmp_path / name))
        assert res is not None, (name, log)
        ours, meta = res
        compare(p, ours, meta)
        hdr = mn.read_hdr(p[:-4] + ".hdr")
        md = meta["metadata"]
        assert md["hdr"] == {k.strip(): v.strip() for k, v in hdr.items()}
        assert md["counter_depth"] == int(hdr["Counter Depth (number)"])
        assert md["software_version"] == "0.77"
        n = int(hdr["Frames in Acquisition (Number)"])
        assert meta["frames_found"] == n and md["first_frame_time"] == meta["headers"][0]["timestamp_ns"]
        assert md["last_frame_time"] == meta["headers"][-1]["timestamp_ns"]
        fpt = int(hdr["Frames per Trigger (Number)"])
        if n == 1:
            assert meta["scan_shape_from"] == "single frame" and meta["scan_shape"] == [1, 1]
        elif fpt > 1:
            assert meta["scan_shape"] == [n // fpt, fpt] and meta["scan_shape_from"].startswith(".hdr Frames per")
        else:
            assert meta["scan_shape_from"] == "undetermined" and meta["scan_shape"] == [0, 0]
        assert meta["warnings"] == []


def test_real_quad_9_frames_need_a_scan_shape_and_take_one(real_dir, tmp_path):
    p = os.path.join(real_dir, "Quad_9_Frame_CounterDepth_12_Rows_256.mib")
    res, _ = dump(p, str(tmp_path / "a"), 3, 3)
    ours, meta = res
    assert meta["scan_shape"] == [3, 3] and meta["scan_shape_from"] == "given"
    compare(p, ours, meta)
    res, _ = dump(p, str(tmp_path / "b"), 2, 4)  # 8 of 9: more frames than the scan
    assert res is None
    res, _ = dump(p, str(tmp_path / "c"), 0, 4)  # rows of 4: 2 whole rows, 1 frame dropped with a warning
    ours, meta = res
    assert meta["scan_shape"] == [2, 4] and ours.shape[0] == 8 and len(meta["warnings"]) == 1
    assert "cut to 2 rows, 1 frames dropped" in meta["warnings"][0]
    _, frames = mn.read_mib(p)
    assert ours.tobytes() == frames[:8].tobytes()


def test_real_file_opened_by_its_hdr(real_dir, tmp_path):
    p = os.path.join(real_dir, "Single_9_Frame_CounterDepth_1_Rows_256RAW.hdr")
    res, log = dump(p, str(tmp_path / "h"))
    assert res is not None, log
    ours, meta = res
    assert meta["files"] == [p[:-4] + ".mib"] and meta["scan_shape"] == [1, 9]
    compare(p[:-4] + ".mib", ours, meta)


# -- files of the sample writer, every form --

FORMS = [(d, quad, raw, gap) for d in (1, 6, 12, 24) for quad in (False, True) for raw in (False, True)
         for gap in ((False, True) if quad else (False,))]


@pytest.mark.parametrize("depth,quad,raw,gap", FORMS)
def test_sample_writer_files_decode_as_numpy_reads_them(tmp_path, depth, quad, raw, gap):
    side = (130 if gap else 128) if quad else 64
    out = tmp_path / "s.mib"
    args = [QGPU, "sample", str(out), "--format", "mib", "--scan", "3", "4", "--detector", str(side), str(side),
            "--counter-depth", str(depth), "--dose", "3000", "--seed", "5"]
    args += ["--quad"] if quad else []
    args += ["--raw"] if raw else []
    args += ["--gap"] if gap else []
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res, log = dump(str(out), str(tmp_path / "d"))
    assert res is not None, log
    ours, meta = res
    compare(str(out), ours, meta)
    assert meta["scan_shape"] == [3, 4] and meta["scan_shape_from"].startswith(".hdr Frames per Trigger")
    assert ours.shape == (12, side, side)
    assert int(ours.max()) <= 2 ** depth - 1 and int(ours.sum()) > 0
    if quad and raw and gap:  # the gap cross is not stored in raw frames: zeros
        s = (side - 2) // 2
        assert not ours[:, s:s + 2, :].any() and not ours[:, :, s:s + 2].any()
    with open(out, "rb") as f:
        head = f.read(800)
    assert head.startswith(b"MQ1,000001,%05d," % (768 if quad else 384))
    assert b",MQ1A," in head and head.split(b"\x00")[0].endswith(b"ns,%d," % depth)


def test_sample_writer_multi_file_acquisition(tmp_path):
    out = tmp_path / "multi.mib"
    r = subprocess.run([QGPU, "sample", str(out), "--format", "mib", "--scan", "5", "6", "--detector", "32", "32",
                        "--counter-depth", "12", "--files", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    parts = sorted(glob.glob(str(tmp_path / "multi_*.mib")))
    assert [os.path.basename(p) for p in parts] == [f"multi_{k:06d}.mib" for k in (1, 2, 3, 4)]
    frames = np.concatenate([mn.read_mib(p)[1] for p in parts])
    for start in (parts[2], str(tmp_path / "multi.hdr")):
        res, log = dump(start, str(tmp_path / ("out_" + os.path.basename(start))))
        assert res is not None, log
        ours, meta = res
        assert meta["files"] == parts and meta["scan_shape"] == [5, 6]
        assert ours.tobytes() == frames.tobytes()
        assert [h["sequence"] for h in meta["headers"]] == list(range(1, 31))


@pytest.mark.parametrize("args,needle", [
    (["--format", "tiff"], "--format must be h5, mib, npy, raw, mrc, empad, dm3, dm4, emd, stempy or csr"),
    (["--counter-depth", "6"], "--counter-depth does not apply to --format h5"),
    (["--format", "mib", "--dtype", "uint8"], "--dtype does not apply to --format mib"),
    (["--format", "mib", "--counter-depth", "7"], "counter depth 7 is not 1, 6, 12 or 24"),
    (["--format", "mib", "--quad", "--detector", "100", "50"], "a quad frame is square"),
    (["--format", "mib", "--raw", "--detector", "10", "10", "--counter-depth", "1"], "not whole groups of 64"),
    (["--format", "mib", "--gap"], "the gap layout (2x2G) needs a quad"),
])
def test_sample_cli_refuses_options_that_do_not_fit(tmp_path, args, needle):
    r = subprocess.run([QGPU, "sample", str(tmp_path / "x.mib"), "--scan", "2", "2", *args], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and needle in r.stderr, r.stderr
    assert not list(tmp_path.iterdir())
