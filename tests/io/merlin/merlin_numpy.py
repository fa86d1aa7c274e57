"""An independent Merlin .mib reader in numpy, written from the format description (docs/design.md, Merlin section;
/work/shared/FORMATS.md section (1)), to check our C++ header parser and decoders on real files.

It shares no code with src/io/merlin: headers are split on commas, pixels read with np.frombuffer('>u2', ...),
1-bit raw data unpacked with np.unpackbits, the raw reordering and the quad assembly done with numpy slicing.
Orientation: rows as stored (LiberTEM's convention; rosettasciio flips rows).
"""
import os

import numpy as np

RAW_GROUP = {1: 64, 6: 8, 12: 4}  # pixels whose order is reversed together in raw (R64) data


def parse_header(head: bytes):
    """Fields of one frame header (the bytes of at least one whole header)."""
    size = int(head[:64].split(b",")[2])
    text = head[:size].split(b"\x00")[0].decode("ascii")
    parts = text.split(",")
    h = {
        "sequence": int(parts[1]),
        "header_bytes": int(parts[2]),
        "chips": int(parts[3]),
        "width": int(parts[4]),
        "height": int(parts[5]),
        "pixel_type": parts[6],
        "layout": parts[7].strip(),
        "chip_select": int(parts[8], 16),
        "timestamp": parts[9],
        "shutter_s": float(parts[10]),
        "counter": int(parts[11]),
        "colour_mode": int(parts[12]),
        "gain_mode": int(parts[13]),
        "counter_depth": None,
    }
    h["thresholds_kev"] = [float(p) for p in parts[14:22]]
    if "MQ1A" in parts:
        i = parts.index("MQ1A")
        h["timestamp_ns"] = parts[i + 1]
        h["exposure_ns"] = int(parts[i + 2][:-2])
        h["counter_depth"] = int(parts[i + 3])
    h["dac_blocks"] = parts.count("3RX")
    return h


def payload_bytes(h):
    w, hh, t = h["width"], h["height"], h["pixel_type"]
    if t == "R64":
        return {1: w * hh // 8, 6: w * hh, 12: 2 * w * hh, 24: 2 * w * hh}[h["counter_depth"]]
    return w * hh * {"U01": 1, "U08": 1, "U16": 2, "U32": 4}[t]


def _unscramble(raw: np.ndarray, depth: int) -> np.ndarray:
    """Raw pixels (flat, stored order, already integers) -> pixels in detector order: groups reversed."""
    g = RAW_GROUP[depth]
    return raw.reshape(-1, g)[:, ::-1].reshape(-1)


def _raw_pixels(payload: np.ndarray, depth: int) -> np.ndarray:
    """Flat raw values of one raw (R64) payload in detector order (before any chip assembly)."""
    if depth == 1:
        # 64 pixels per 8 bytes; the 8 bytes reversed; pixel k of a byte is bit k (least significant first).
        groups = payload.reshape(-1, 8)[:, ::-1]
        return np.unpackbits(groups, axis=1, bitorder="little").reshape(-1).astype(np.uint8)
    if depth == 6:
        return _unscramble(payload, 6)
    if depth == 12:
        return _unscramble(payload.view(">u2").astype(np.uint16), 12)
    raise ValueError(depth)


def _assemble_quad(raw: np.ndarray, s: int, gap: bool) -> np.ndarray:
    """Raw quad image (s rows x 4s cols: [chip4 | chip3 | chip2 | chip1] per row) -> 2s x 2s (or 2s+2 with gaps)."""
    raw = raw.reshape(s, 4 * s)
    c4, c3, c2, c1 = (raw[:, k * s:(k + 1) * s] for k in range(4))
    g = 2 if gap else 0
    out = np.zeros((2 * s + g, 2 * s + g), dtype=raw.dtype)
    out[:s, :s] = c1
    out[:s, s + g:] = c2
    out[s + g:, :s] = c3[::-1, ::-1]
    out[s + g:, s + g:] = c4[::-1, ::-1]
    return out


def decode(h, payload: bytes) -> np.ndarray:
    """One frame's payload -> the detector frame (uint8 for 1/6 bit, uint16 for 12, uint32 for 24)."""
    p = np.frombuffer(payload, dtype=np.uint8)
    t, w, hh = h["pixel_type"], h["width"], h["height"]
    if t in ("U01", "U08"):
        return p.reshape(hh, w).copy()
    if t == "U16":
        return p.view(">u2").reshape(hh, w).astype(np.uint16)
    if t == "U32":
        return p.view(">u4").reshape(hh, w).astype(np.uint32)
    assert t == "R64"
    depth = h["counter_depth"]
    quad = h["chips"] == 4 and h["layout"] in ("2x2", "2x2G")
    if depth == 24:
        half = p.size // 2
        hi = _raw_pixels(p[:half], 12).astype(np.uint32)
        lo = _raw_pixels(p[half:], 12).astype(np.uint32)
        flat = (hi << 12) + lo
        npx = flat.size
    else:
        flat = _raw_pixels(p, depth)
        npx = flat.size
    if quad:
        s = int(round((npx // 4) ** 0.5))
        return _assemble_quad(flat, s, h["layout"].endswith("G"))
    if depth == 24:
        return flat.reshape(hh, w // 2)
    return flat.reshape(hh, w)


def read_mib(path):
    """All frames of one .mib file: (headers, frames array (n, rows, cols))."""
    data = open(path, "rb").read()
    first = parse_header(data[:2048])
    frame_bytes = first["header_bytes"] + payload_bytes(first)
    assert len(data) % frame_bytes == 0, (path, len(data), frame_bytes)
    headers, frames = [], []
    for k in range(len(data) // frame_bytes):
        start = k * frame_bytes
        h = parse_header(data[start:start + first["header_bytes"]])
        if h["counter_depth"] is None:
            h["counter_depth"] = first["counter_depth"]
        headers.append(h)
        frames.append(decode(h, data[start + h["header_bytes"]:start + frame_bytes]))
    return headers, np.stack(frames)


def read_hdr(path):
    """Key -> value of a .hdr acquisition header."""
    out = {}
    with open(path, "rb") as f:
        for line in f.read().decode("latin-1").split("\n"):
            if line.startswith("HDR") or line.startswith("End") or not line.strip():
                continue
            k, v = line.split("\t", 1)
            out[k.rstrip(":")] = v.rstrip("\r")
    return out


def hdr_path_for(mib_path):
    p = os.path.splitext(mib_path)[0] + ".hdr"
    return p if os.path.exists(p) else None
