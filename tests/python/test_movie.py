import json
import shutil
import subprocess

import numpy as np
import pytest

import quantem.gpu as qgpu


@pytest.fixture(scope="module")
def ds(sample_path):
    return qgpu.io.load(sample_path, backend="cpu")


def probe(path):
    if not shutil.which("ffprobe") or not shutil.which("ffmpeg"):
        pytest.skip("ffprobe/ffmpeg not installed: the movie was written, its frames are checked in CI")
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=codec_name,width,height,nb_read_frames", "-of", "json", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["streams"][0]


def test_adf_sweep_mp4_returns_path_and_frame_count(ds, tmp_path):
    out = tmp_path / "adf.mp4"
    path, n = qgpu.movie.render(ds, out, sweep="adf", range=(4, 12), frames=5, label=True, size=(64, 50))
    assert (path, n) == (str(out), 5)
    s = probe(out)
    assert (s["codec_name"], s["width"], s["height"], int(s["nb_read_frames"])) == ("h264", 64, 50, 5)


def test_path_row_gif_matches_rendered_pattern(ds, tmp_path):
    out = tmp_path / "row.gif"
    path, n = qgpu.movie.render(ds, out, sweep="path_row", row=2, colormap="gray", percentiles=(0, 100))
    assert n == 10  # the sample has 10 scan columns
    s = probe(out)
    assert (s["codec_name"], s["width"], s["height"], int(s["nb_read_frames"])) == ("gif", 48, 48, 10)
    # frame 3 decoded back equals the display pipeline on that diffraction pattern (gray palette: exact)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(out), "-vf", r"select=eq(n\,3)", "-frames:v", "1",
                          "-f", "rawvideo", "-pix_fmt", "rgba", "-"], check=True, capture_output=True).stdout
    got = np.frombuffer(raw, np.uint8).reshape(48, 48, 4)
    pattern = ds.read(scan_region=(2, 3, 1, 1))[0, 0].astype(np.float32)
    want = np.asarray(qgpu.display.render(pattern, colormap="gray", scale="log", percentiles=(0, 100)))
    np.testing.assert_array_equal(got[..., :3], want[..., :3])


def test_bad_requests_raise_before_writing(ds, tmp_path):
    with pytest.raises(qgpu.InvalidArgument, match="greater than stop"):
        qgpu.movie.render(ds, tmp_path / "a.mp4", sweep="bf", range=(9, 3))
    with pytest.raises(qgpu.InvalidArgument, match="got 0"):
        qgpu.movie.render(ds, tmp_path / "a.mp4", sweep="bf", range=(1, 3), frames=0)
    with pytest.raises(qgpu.InvalidArgument, match="unknown extension"):
        qgpu.movie.render(ds, tmp_path / "a.webm", sweep="bf", range=(1, 3))
    with pytest.raises(qgpu.IoError, match="does not exist"):
        qgpu.movie.render(ds, tmp_path / "nope" / "a.mp4", sweep="bf", range=(1, 3))
    with pytest.raises(TypeError, match="colour"):
        qgpu.movie.render(ds, tmp_path / "a.mp4", sweep="bf", range=(1, 3), colour="red")
    assert not (tmp_path / "a.mp4").exists()
