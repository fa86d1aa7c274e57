"""The first hour with qgpu (issue 27): parsing, exit statuses, QGPU_BACKEND, messages in the user's terms, all-or-
nothing outputs, progress bars only on a terminal, angles in (-180, 180], info's storage and size lines."""
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import QGPU, qgpu, qgpu_on_terminal


def qgpu_env(*args, **env):
    return subprocess.run([QGPU, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


# --- parsing ---

def test_the_file_may_follow_a_bare_bf_or_adf(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", "--bf", path, "--com", "--backend", "cpu", "-o", tmp_path / "a")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a" / "bf.npy").exists() and (tmp_path / "a" / "com_row.npy").exists()
    r = qgpu("image", "--adf", path, "--backend", "cpu", "-o", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "b" / "adf.npy").exists()
    ref = qgpu("image", path, "--bf", "--backend", "cpu", "-o", tmp_path / "c")
    np.testing.assert_array_equal(np.load(tmp_path / "a" / "bf.npy"), np.load(tmp_path / "c" / "bf.npy"))


def test_a_mistyped_command_names_the_nearest():
    r = qgpu("imgae", "scan.h5", "--bf")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: unknown command 'imgae' (did you mean 'image'?)"), r.stderr
    r = qgpu("zzzzzzzz")
    assert r.returncode == 2 and "did you mean" not in r.stderr and "serve" in r.stderr, r.stderr


@pytest.mark.parametrize("args,status", [
    (["image", "{f}", "--bf", "--no-such-flag"], 2),   # unknown option
    (["image", "--bf"], 2),                             # no file
    (["image", "{f}", "--bf", "--scan-region", "0", "0"], 2),  # too few values
    (["image", "{f}", "--bf", "--decoder", "fast"], 1),  # a bad value
    (["image", "{f}", "--bf", "--bin-scan", "two"], 1),  # not a number
    (["ssb", "{f}", "extra"], 2),                       # an argument too many
])
def test_parse_errors_print_one_error_line_and_exit_1_or_2(sample, tmp_path, args, status):
    path, _ = sample
    r = qgpu(*[a.format(f=path) for a in args], "-o", tmp_path / "o")
    assert r.returncode == status, (r.returncode, r.stderr)
    assert r.stderr.startswith("qgpu: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_help_and_version_exit_0():
    assert qgpu("--help").returncode == 0
    assert qgpu("image", "--help").returncode == 0
    assert qgpu("--version").returncode == 0


# --- no GPU: QGPU_BACKEND ---

def test_qgpu_backend_cpu_sets_auto_once_and_says_so(sample, tmp_path):
    path, _ = sample
    r = qgpu_env("image", path, "--bf", "--adf", "-o", tmp_path, QGPU_BACKEND="cpu")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("qgpu: backend cpu (QGPU_BACKEND)") == 1, r.stderr
    assert "cpu" in r.stdout, r.stdout  # the dataset summary names its backend


def test_an_explicit_backend_wins_over_qgpu_backend(sample, tmp_path):
    path, _ = sample
    r = qgpu_env("image", path, "--bf", "--backend", "cpu", "-o", tmp_path, QGPU_BACKEND="cuda")
    assert r.returncode == 0, r.stderr
    assert "QGPU_BACKEND" not in r.stderr


def test_an_unknown_qgpu_backend_is_an_error_naming_the_values(sample, tmp_path):
    path, _ = sample
    r = qgpu_env("image", path, "--bf", "-o", tmp_path / "o", QGPU_BACKEND="opencl")
    assert r.returncode == 1
    assert r.stderr.startswith("qgpu: error: QGPU_BACKEND: unknown backend 'opencl' (expected cuda, cpu, vulkan or auto)"), \
        r.stderr


def test_without_a_gpu_the_hint_is_in_cli_spelling(sample, tmp_path):
    path, _ = sample
    info = qgpu_env("info", path, QGPU_BACKEND="")
    gpu = next(line for line in info.stdout.splitlines() if line.startswith("gpu "))
    if "none:" not in gpu:
        pytest.skip("this machine has a GPU")
    assert "driver version is insufficient" not in gpu, gpu
    r = qgpu_env("image", path, "--bf", "-o", tmp_path / "o", QGPU_BACKEND="")
    assert r.returncode == 1
    assert "--backend cpu" in r.stderr and "QGPU_BACKEND=cpu" in r.stderr and "backend='cpu'" not in r.stderr, r.stderr


# --- messages ---

@pytest.fixture
def zeros(tmp_path):
    path = tmp_path / "zeros.npy"
    np.save(path, np.zeros((4, 4, 16, 16), np.uint16))
    return path


def test_all_zero_data_with_mean_says_so_and_writes_nothing(zeros, tmp_path):
    out = tmp_path / "new"
    r = qgpu("image", zeros, "--mean", "--backend", "cpu", "-o", out)
    assert r.returncode == 1
    assert "--mean: the mean diffraction pattern is zero everywhere" in r.stderr, r.stderr
    assert "pattern_log" not in r.stderr
    assert not out.exists()


def test_a_failure_after_some_outputs_removes_them_and_keeps_what_was_there(zeros, tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    # bf with a given disk is written (zeros), then the ADF default needs a fitted disk: none in all-zero data.
    r = qgpu("image", zeros, "--bf", 3, "--center", 8, 8, "--adf", "--backend", "cpu", "-o", out)
    assert r.returncode == 1, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_progress_bars_only_on_a_terminal(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", path, "--bf", "--backend", "cpu", "-o", tmp_path / "a")
    assert r.returncode == 0 and "\r" not in r.stderr and "loading [" not in r.stderr, repr(r.stderr)
    status, err = qgpu_on_terminal("image", path, "--bf", "--backend", "cpu", "-o", tmp_path / "b")
    assert status == 0 and "\rloading [" in err, repr(err)


def test_rotation_is_printed_in_minus_180_to_180(sample, tmp_path):
    path, _ = sample
    r = qgpu("image", path, "--dpc", "--backend", "cpu", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    m = re.search(r"rotation\s+(-?[\d.]+) \+- ([\d.]+) deg", r.stdout)  # the angle and its uncertainty
    assert m, r.stdout
    angle, sigma = float(m.group(1)), float(m.group(2))
    assert -180 < angle <= 180, r.stdout
    assert abs(angle) < max(5, 3 * sigma), r.stdout  # the sample has no rotation
    warned = re.search(r"(?:; |rotation )(-?[\d.]+) (?:\+- [\d.]+ )?deg(?: with transpose)?(?: is a guess|:)", r.stderr)
    assert warned is None or float(warned.group(1)) == round(angle, 1), r.stderr  # the warning names the same angle


def test_info_names_contiguous_storage_and_keeps_one_unit_per_line(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "contiguous.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/data", data=np.ones((16, 32, 32), np.uint16))  # not chunked
    r = qgpu("info", path)
    assert r.returncode == 0, r.stderr
    chunks = next(line for line in r.stdout.splitlines() if line.startswith("chunks "))
    assert "contiguous" in chunks and "(other)" not in chunks, chunks
    for key in ("decoded ", "load "):
        line = next(line for line in r.stdout.splitlines() if line.startswith(key))
        units = set(re.findall(r"\d (GB|MB|kB)\b", line))
        assert len(units) == 1, line
