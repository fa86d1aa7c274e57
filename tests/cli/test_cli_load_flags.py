"""One load-flag set (src/cli/load_flags.hpp) on every loading command: each flag parses and reaches the load, and
the user guide's list of load options is the set every loading command's --help shows (issue 27)."""
import re
from pathlib import Path

import pytest

from conftest import qgpu

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
LOADING = ["image", "ssb", "parallax", "movie", "cache", "convert", "serve", "info"]


def command(name, path, tmp_path):
    """A command line of `name` on `path` that would load it (serve only ever meets a failing load here)."""
    return {
        "image": ["image", path, "--bf", "-o", tmp_path / "out"],
        "ssb": ["ssb", path, "-o", tmp_path / "out"],
        "parallax": ["parallax", path, "-o", tmp_path / "out"],
        "movie": ["movie", path, "-o", tmp_path / "m.gif", "--bf-sweep", 2, 5, "--frames", 2],
        "cache": ["cache", path, "-o", tmp_path / "c.h5"],
        "convert": ["convert", path, tmp_path / "c.h5"],
        "serve": ["serve", path, "--port", 0],
        "info": ["info", path, "--timing"],
    }[name]


# Every load flag with a value that loads the sample (10 x 12 scan, 48 x 48 detector).
EVERY_FLAG = [
    ["--backend", "cpu"], ["--dataset", "/entry/data/data"], ["--format", "hdf5"], ["--flip-rows"],
    ["--single-file"], ["--dtype", "uint16"], ["--detector-shape", 48, 48], ["--offset", 0], ["--frame-header", 0],
    ["--frame-footer", 0], ["--scan-region", 0, 0, 4, 4], ["--detector-region", 0, 0, 40, 40], ["--bin-scan", 2],
    ["--bin-detector", 2], ["--scan-shape", 10, 12], ["--pixel-mask", "zero"], ["--representation", "dense"],
    ["--decoder", "quantem"], ["--read-threads", 2], ["--direct-io"],
]


def load_flags_of(help_text):
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w,)?(--[\w-]+)", help_text, re.M)}


@pytest.mark.parametrize("name", LOADING)
def test_every_load_flag_parses_and_reaches_the_load(sample, tmp_path, name):
    path, _ = sample
    missing = tmp_path / "no_such_mask.npy"  # the load fails on it, so each run stops there (serve too)
    for flag in EVERY_FLAG:
        args = command(name, path, tmp_path) + [*flag, "--pixel-mask-file", missing]
        if "--backend" not in flag:
            args += ["--backend", "cpu"]
        r = qgpu(*args)
        # The Merlin and raw-layout flags on an HDF5 file are refused by the load, naming them; the rest load as far as
        # the missing mask.
        expected = {"--flip-rows": "apply to Merlin files", "--single-file": "apply to Merlin files",
                    "--dtype": "a raw layout", "--detector-shape": "a raw layout"}.get(flag[0], "no_such_mask.npy")
        assert r.returncode == 1, (name, flag, r.returncode, r.stderr)
        assert r.stderr.startswith("qgpu: error: ") and expected in r.stderr, (name, flag, r.stderr)


# A value of each kind that the load itself refuses, with what its error says: the value reached io::load.
REFUSED = [
    (["--dataset", "/entry/nope"], "/entry/nope"),
    (["--scan-region", 0, 0, 99, 99], "region"),
    (["--detector-region", 0, 0, 99, 99], "region"),
    (["--scan-shape", 7, 7], "7"),
    (["--format", "npy"], "npy"),
]


@pytest.mark.parametrize("name", LOADING)
@pytest.mark.parametrize("flag,message", REFUSED)
def test_each_load_value_reaches_the_load(sample, tmp_path, name, flag, message):
    path, _ = sample
    r = qgpu(*command(name, path, tmp_path), "--backend", "cpu", *flag)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: ") and message in r.stderr.lower(), r.stderr


def test_read_flags_reach_the_timing_load(sample):
    path, _ = sample
    r = qgpu("info", path, "--timing", "--backend", "cpu", "--read-threads", 3, "--direct-io")
    assert r.returncode == 0, r.stderr
    read = next(line for line in r.stdout.splitlines() if line.startswith("read "))
    assert "3 threads" in read and "O_DIRECT" in read, read


def test_regions_and_bins_on_ssb_and_cache(sample, tmp_path):
    path, _ = sample
    r = qgpu("cache", path, "-o", tmp_path / "c.h5", "--backend", "cpu", "--scan-region", 0, 0, 8, 8, "--bin-scan", 2)
    assert r.returncode == 0, r.stderr
    assert "scan 4 x 4" in r.stdout or "4x4" in r.stdout.replace(" ", ""), r.stdout


def test_guide_load_options_are_those_every_loading_command_takes():
    text = GUIDE.read_text()
    start = text.index("Every command that loads")
    listed = set(re.findall(r"`(--[\w-]+)", text[start:text.index("`qgpu image` adds", start)]))
    common = None
    for name in LOADING:
        r = qgpu(name, "--help")
        assert r.returncode == 0, r.stderr
        flags = load_flags_of(r.stdout)
        common = flags if common is None else common & flags
    assert listed == common - {"--help"}, (sorted(listed - common), sorted(common - listed))


def test_info_shows_the_load_its_flags_ask_for(sample):
    path, _ = sample
    for rep in ("encoded", "dense"):
        r = qgpu("info", path, "--representation", rep, "--backend", "cpu")
        assert r.returncode == 0, r.stderr
        assert f"load        would be {rep} on cpu" in r.stdout, r.stdout


def test_plugin_named_by_qgpu_bshuf_plugin_alone_loads(sample, tmp_path):
    """The bitshuffle plugin found only through QGPU_BSHUF_PLUGIN (not on HDF5's own path): the file is inspected in
    the isolation child, and the load in the parent must still register the plugin (the H200 run of 2026-12-05
    refused every load with 'filter ... not available here')."""
    import os
    import subprocess
    import numpy as np
    from conftest import QGPU
    path, frames = sample
    plugin = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so"
    if not os.path.exists(plugin):
        pytest.skip("Debian's bitshuffle plugin is not installed")
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(tmp_path / "no_plugins_here"), QGPU_BSHUF_PLUGIN=plugin)
    out = tmp_path / "o"
    r = subprocess.run([QGPU, "image", str(path), "--backend", "cpu", "--adf", "0", "100",
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out / "adf.npy"), frames.sum(axis=(2, 3)))
