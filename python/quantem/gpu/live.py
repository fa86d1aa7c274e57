"""Live acquisition: a detector's stream received into a growing dataset, its images updated while the scan runs.

    live = qgpu.live.connect("dectris://det-dcu:31001", scan_shape=(512, 512), backend="cuda")
    p = live.products()            # numpy arrays so far: received mask, sum pattern, images["bf"/"adf"/...], CoM
    live.set_detector("ring", qgpu.detector.annulus_mask(192, 192, 96, 96, 30, 60))   # any time, even mid-scan
    ds = live.wait()               # the finished series: an ordinary Dataset, every query works on it
    live.close()

Sources: dectris://HOST[:PORT] (DECTRIS SIMPLON stream V2, CBOR; port 31001), dectris-v1://HOST[:PORT] (stream V1,
JSON; 9999), merlin://HOST[:PORT] (Merlin data port, 6342: start the acquisition on the Merlin). The scan shape comes
from scan_shape=, else the stream (V2 start user_data scan_shape, the Merlin header's ScanX/ScanY), else a square
frame count. Frames missing, repeated, outside the scan or corrupt are named in products()["problems"] and left
empty (products()["received"] is 0 there; the finished Dataset's provenance lists the missing positions).

simulate(file, ...) replays a file as such a stream (for tests and demos), blocking until it is sent.
"""
from . import _qgpu
from ._args import keywords


class Live:
    """A running receiver (qgpu.live.connect). A context manager: leaving the block closes it."""

    def __init__(self, session):
        self._s = session

    def products(self):
        """The current series' products so far: {series_id, finished, scan_shape, detector_shape, received (uint8
        scan-shaped: 1 = frame in), frames_received, sum_pattern (uint64), images {name: uint64 scan-shaped array},
        detectors {name: description}, com_row, com_col (float32; the detector centre where no frame is in),
        problems [str]}."""
        return self._s.products()

    def stats(self):
        """Counters: frames_received, frames_decoded, dropped, duplicates, out_of_range, corrupt, stale, problems,
        frames_per_second, latency_ms, max_latency_ms, ring_peak_bytes, series_started, series_finished."""
        return self._s.stats()

    def set_detector(self, name, mask):
        """A virtual detector `name` (bool or non-negative integer weights, detector-shaped), applied at once to every
        frame received so far, then to each new frame. Replaces a detector of that name (e.g. "bf")."""
        self._s.set_detector(name, mask)

    def remove_detector(self, name):
        self._s.remove_detector(name)

    def wait(self, series=1, timeout=None):
        """Waits until `series` series have finished; returns the last finished Dataset (None on timeout)."""
        done = self._s.wait(series, 1e9 if timeout is None else float(timeout))
        ds = self._s.datasets()
        return ds[-1] if done and ds else None

    def current(self):
        """The current series' frames so far as a host Dataset (a copy; positions not received are zero; None before
        a series starts). Costs the whole scan's bytes: products() is the cheap view."""
        return self._s.current()

    @property
    def datasets(self):
        """Every finished series' Dataset, in order."""
        return self._s.datasets()

    @property
    def running(self):
        return self._s.running

    @property
    def url(self):
        return self._s.url

    @property
    def backend(self):
        return self._s.backend

    def close(self):
        """Stops the receiver, decodes what arrived and ends an open series ("stopped")."""
        self._s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        p = self._s.products()
        return (f"<qgpu.live {self.url} backend={self.backend} series={p['series_id'] or '-'} "
                f"frames={p['frames_received']}/{p['scan_shape'][0] * p['scan_shape'][1]}>")


@keywords
def connect(url, scan_shape=None, backend="auto", *, channel="", series=0, idle_timeout=0.0, ring_mib=256,
            pixel_mask="keep", batch_frames=0, batch_ms=0, save=None):
    """Starts receiving `url` in the background; returns a Live.

    scan_shape: (rows, cols). Default None: the stream's, else a square frame count.
    backend: "cpu" | "cuda" | "auto" (cuda when a GPU is usable; never a silent fallback).
    channel: stream V2 image channel (default the first).  series: stop after this many series (0: until close()).
    idle_timeout: stop when nothing arrived for this many seconds (0: never).  ring_mib: received frames waiting
    for the decoder, at most; a frame that finds it full for 1 s is dropped and counted.  pixel_mask: "keep" | "zero"
    (the detector's bad pixels set to 0).  batch_frames, batch_ms: decode batches (0: 1024 frames, 5 ms).
    save: also write each series as it arrives to this DECTRIS-style HDF5 file (str or os.PathLike; chunks stored
    verbatim; later series get a _series<id> suffix); products()["problems"] names a failure.
    Raises: InvalidArgument (a bad URL or option), BackendUnavailable."""
    rows, cols = (0, 0) if scan_shape is None else (int(scan_shape[0]), int(scan_shape[1]))
    return Live(_qgpu.LiveSession(str(url), rows, cols, backend, channel, int(series), float(idle_timeout),
                                  int(ring_mib), pixel_mask, int(batch_frames), int(batch_ms),
                                  "" if save is None else str(save)))


@keywords
def simulate(file, protocol="dectris-v2", *, host="127.0.0.1", port=0, rate=0.0, repeat=1, scan_shape=None,
             wait=30.0):
    """Replays `file` as a detector stream (blocking; run it in a thread to receive in the same process).

    protocol: "dectris-v2" | "dectris-v1" | "merlin".  port: 0 = the protocol's default (31001, 9999, 6342).
    rate: frames per second (0: as fast as the receiver takes them).  repeat: series sent.
    scan_shape: (rows, cols) when the file states none.  wait: seconds to wait for a receiver.
    Returns {frames_sent, bytes_sent, seconds, frames_per_second, source}."""
    rows, cols = (0, 0) if scan_shape is None else (int(scan_shape[0]), int(scan_shape[1]))
    return _qgpu.live_simulate(file, protocol, host, int(port), float(rate), int(repeat), rows, cols, float(wait))
