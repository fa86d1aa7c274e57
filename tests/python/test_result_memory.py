"""Large results' memory used again (core/result_memory.hpp): an array freed in Python gives its memory to the next
result of that size, and those results are right (every size recycled here through QGPU_RECYCLE_FROM_BYTES=1; the
CPU backend's centred DPC and rotated field write into such memory)."""
import gc

import numpy as np

import quantem.gpu as qgpu


def _pointer(a):
    return a.__array_interface__["data"][0]


def test_a_freed_array_lends_its_memory_to_the_next_result(sample_path, monkeypatch):
    ds = qgpu.io.load(sample_path, backend="cpu")
    dr0, dc0 = qgpu.dpc.centered_dpc(ds)  # fresh memory: the reference values
    want_r, want_c = np.array(dr0), np.array(dc0)
    monkeypatch.setenv("QGPU_RECYCLE_FROM_BYTES", "1")
    dr, dc = qgpu.dpc.centered_dpc(ds)
    given = {_pointer(dr), _pointer(dc)}
    dr.fill(-7.5)  # garbage left in the memory given back
    dc.fill(np.nan)
    del dr, dc
    gc.collect()
    r2, c2 = qgpu.dpc.centered_dpc(ds)
    assert {_pointer(r2), _pointer(c2)} == given, "the next results took the freed arrays' memory"
    np.testing.assert_array_equal(r2, want_r)
    np.testing.assert_array_equal(c2, want_c)
    fr, fc = qgpu.dpc.rotate_field(r2, c2, 30.0, False)
    want_fr, want_fc = qgpu.dpc.rotate_field(want_r, want_c, 30.0, False)
    np.testing.assert_array_equal(fr, want_fr)
    np.testing.assert_array_equal(fc, want_fc)


def test_a_freed_region_lends_its_memory_to_the_next_read_of_that_size(sample_path, monkeypatch):
    ds = qgpu.io.load(sample_path, backend="cpu")
    want = [np.array(ds[0:4, 0:3]), np.array(ds[5:9, 2:5])]  # the values, from fresh memory
    monkeypatch.setenv("QGPU_RECYCLE_FROM_BYTES", "1")
    first = ds[0:4, 0:3]
    given = _pointer(first)
    first.fill(65535)  # garbage left in the memory given back
    del first
    gc.collect()
    second = ds[5:9, 2:5]  # another region of the same size takes it, every value written
    assert _pointer(second) == given
    np.testing.assert_array_equal(second, want[1])
    del second
    gc.collect()
    np.testing.assert_array_equal(ds[0:4, 0:3], want[0])
    assert ds[0:4, 0:3].dtype == np.uint16 and ds[0:4, 0:3].shape == (4, 3, 48, 48)
