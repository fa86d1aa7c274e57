"""Issue 25, the read path through `qgpu`: damaged layouts, chunk indexes, filter parameters and chunks give a clear
error and exit 1 on every decoder, `qgpu info` tells a damaged file from an unfinished one and shows what a load
would decode before anything loads, and no error leaves HDF5 objects open at exit (HDF5 then prints its
"infinite loop closing library" dump). The files come from the C++ generator (tests/io/hostile_h5.hpp)."""
import os
import subprocess

import pytest

from conftest import qgpu

WRITER = os.environ.get("QGPU_WRITE_HOSTILE",
                        os.path.join(os.path.dirname(__file__), "../../build/tests/io/write_hostile_files"))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    if not os.path.exists(WRITER):
        pytest.skip(f"{WRITER} not built")
    d = tmp_path_factory.mktemp("hostile")
    subprocess.run([WRITER, str(d)], check=True, timeout=300)
    cases = []
    for line in (d / "manifest.tsv").read_text().splitlines():
        name, point, expect = line.split("\t")
        cases.append((name, point, expect.split("|"), d / f"{name}.h5"))
    return d, cases


def assert_clean_exit(r):
    assert "infinite loop closing library" not in r.stderr, r.stderr[:2000]
    assert "HDF5-DIAG" not in r.stderr, r.stderr[:2000]


def test_every_case_fails_clearly_on_every_decoder(hostile, tmp_path):
    _, cases = hostile
    assert len(cases) >= 10
    for name, _, expect, path in cases:
        for decoder in ("auto", "quantem", "hdf5"):
            r = qgpu("image", path, "--backend", "cpu", "--decoder", decoder, "--bf", "-o", tmp_path / "out")
            assert r.returncode == 1, (name, decoder, r.returncode, r.stderr)
            assert r.stderr.strip().splitlines()[-1].startswith("qgpu: error: "), (name, decoder, r.stderr)
            for e in expect:
                assert e in r.stderr, (name, decoder, e, r.stderr)
            assert_clean_exit(r)


def test_no_hdf5_dump_at_exit_after_a_damaged_group(hostile, tmp_path):
    # HDF5 fails reading the calibration group; the data loads. Before: the output ended with HDF5's
    # "infinite loop closing library" dump.
    d, _ = hostile
    for args in (("info",), ("image", "--backend", "cpu", "--bf", "-o", tmp_path / "out")):
        r = qgpu(args[0], d / "damaged_calibration.h5", *args[1:])
        assert r.returncode == 0, r.stderr
        assert_clean_exit(r)


def test_info_tells_a_damaged_index_from_an_unfinished_file(hostile):
    _, cases = hostile
    for name, point, expect, path in cases:
        if point not in ("1", "4"):
            continue
        r = qgpu("info", path)
        assert r.returncode == 0, (name, r.stderr)
        ready = [line for line in r.stdout.splitlines() if line.startswith("ready")]
        assert len(ready) == 1 and ready[0].startswith("ready       no: the file is damaged, not unfinished:"), r.stdout
        for e in expect:
            assert e in ready[0], (name, e, ready[0])
        assert "not ready" not in r.stdout and "load        would be" not in r.stdout
        assert_clean_exit(r)


def test_info_shows_the_decoded_size_before_anything_loads(hostile):
    d, _ = hostile
    r = qgpu("info", d / "base.h5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    size = os.path.getsize(d / "base.h5")
    decoded = [line for line in lines if line.startswith("decoded")]
    assert decoded == [f"decoded     131.1 kB dense (131072 bytes) from {size / 1e3:.1f} kB on disk: "
                       f"{131072 / size:.1f}x"], lines
    # --timing prints the same, and what a load would take, before it loads.
    r = qgpu("info", d / "base.h5", "--timing", "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    order = [next(i for i, line in enumerate(lines) if line.startswith(p))
             for p in ("decoded", "load        would be", "timing      loading it now (131.1 kB decoded)", "loaded")]
    assert order == sorted(order), lines
