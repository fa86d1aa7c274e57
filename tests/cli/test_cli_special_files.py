"""Special files as outputs and as a cache's source (issue 25, points 2 and 5), through the qgpu command.

Outputs (`qgpu cache -o`, `qgpu image -o`) are written beside the target and renamed only over a regular file:
a FIFO or device node there is an error naming it, and it is left as it was (before: `qgpu cache -o` renamed
its file over it; `qgpu image` blocked forever opening a FIFO named like one of its outputs). A cache whose
recorded source is now a FIFO says so at once (before: `info`, `image` and `serve` blocked forever on it).
Every call is bounded by a timeout; device nodes are made in the test folder only (root), never /dev.
"""
import os
import re
import shutil
import stat
import subprocess
import time

import pytest

from conftest import QGPU, qgpu


def run(*args, timeout=60):
    return subprocess.run([QGPU, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("special") / "s.h5"
    r = qgpu("sample", path, "--scan", 8, 8, "--detector", 32, 32)
    assert r.returncode == 0, r.stderr
    return path


def make_null_node(path):
    """A character device with the null device's numbers at `path` (a temp folder); None where not allowed."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return None
    return path


def test_cache_output_onto_a_fifo_is_refused_and_kept(small, tmp_path):
    fifo = tmp_path / "products.h5"
    os.mkfifo(fifo)
    r = run("cache", small, "-o", fifo, "--backend", "cpu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"qgpu: error: -o/--out: cache output '{fifo}' is a named pipe (FIFO), not a regular file" in r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["products.h5"]  # nothing else written


def test_cache_output_onto_a_device_node_is_refused_and_kept(small, tmp_path):
    node = make_null_node(tmp_path / "null")
    if node is None:
        pytest.skip("cannot create a device node here (needs CAP_MKNOD)")
    r = run("cache", small, "-o", node, "--backend", "cpu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"cache output '{node}' is a character device, not a regular file" in r.stderr
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    os.unlink(node)


def test_image_output_named_by_a_fifo_is_refused_without_blocking(small, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / "bf.npy"
    os.mkfifo(fifo)
    r = run("image", small, "--backend", "cpu", "--bf", "-o", out)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"qgpu: error: npy output '{fifo}' is a named pipe (FIFO), not a regular file" in r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not [n for n in os.listdir(out) if ".tmp-" in n]


def test_image_replaces_regular_outputs_whole(small, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "bf.json").write_text("stale")
    r = run("image", small, "--backend", "cpu", "--bf", "-o", out)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["bf.json", "bf.npy", "bf.png"]
    assert (out / "bf.json").read_text().startswith("{")


@pytest.fixture()
def cache_with_fifo_source(small, tmp_path):
    """A cache of a copy of the sample; the copy is then replaced by a FIFO of the same name."""
    source = tmp_path / "source.h5"
    shutil.copy(small, source)
    products = tmp_path / "products.h5"
    r = run("cache", source, "-o", products, "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    source.unlink()
    os.mkfifo(source)
    return products, source


def test_info_image_and_serve_on_a_cache_whose_source_is_a_fifo(cache_with_fifo_source, tmp_path):
    products, source = cache_with_fifo_source
    line = f"source file '{source}' is not a regular file (a named pipe (FIFO))"
    t0 = time.monotonic()
    r = run("info", products, timeout=30)
    assert r.returncode == 0, r.stderr
    assert f"source      {source} (CHANGED: the cache is stale)" in r.stdout, r.stdout
    assert f"  changed   {line}" in r.stdout, r.stdout
    r = run("image", products, "--bf", "-o", tmp_path / "img", timeout=30)
    assert r.returncode == 0, r.stderr
    assert f"qgpu: warning: cache '{products}' is stale: {line}" in r.stderr
    assert time.monotonic() - t0 < 30
    serve = subprocess.Popen([QGPU, "serve", str(products), "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        first = ""
        while time.monotonic() < deadline and serve.poll() is None:
            first = serve.stdout.readline()
            if "listening on" in first:
                break
        assert "listening on http://127.0.0.1:" in first, first
    finally:
        serve.terminate()
        _, err = serve.communicate(timeout=30)
    assert f"qgpu serve: warning: cache '{products}' is stale: {line}" in err
    assert stat.S_ISFIFO(os.lstat(source).st_mode)


def test_serve_answers_only_loopback_and_allowed_hosts(small):
    """qgpu serve --allow-host NAME (repeatable): those names and loopback ones are answered, others are 421."""
    import http.client
    serve = subprocess.Popen([QGPU, "serve", str(small), "--backend", "cpu", "--port", "0", "--allow-host",
                              "scope.example", "--allow-host", "viewer.example"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = serve.stdout.readline()
        port = int(re.search(r"listening on http://127\.0\.0\.1:(\d+)/", first).group(1))

        def status(host, origin=None):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            headers = {"Host": host}
            if origin:
                headers["Origin"] = origin
            c.request("GET", "/api/datasets", headers=headers)
            resp = c.getresponse()
            body = resp.read().decode()
            c.close()
            return resp.status, body

        for host in ("evil.com", "localhost.evil.com", "127.0.0.1.nip.io", f"evil.com:{port}"):
            code, body = status(host)
            assert code == 421 and "is not served here" in body, (host, code, body)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "scope.example",
                     f"viewer.example:{port}"):
            assert status(host)[0] == 200, host
        code, body = status(f"127.0.0.1:{port}", origin="http://evil.com")
        assert code == 403 and "cross-origin request from 'http://evil.com' refused" in body, body
    finally:
        serve.terminate()
        serve.communicate(timeout=30)
    r = run("serve", small, "--backend", "cpu", "--port", "0", "--allow-host", "two words")
    assert r.returncode == 1
    assert "qgpu: error: --allow-host: 'two words' is not a host name" in r.stderr
