#pragma once
// Sparse electron-count acquisitions, read dense (io/sparse/load_sparse.hpp):
//  - stempy HDF5 (OpenChemistry/stempy docs/source/StempyH5Format.rst, python/stempy/io/sparse_array.py):
//    electron_events/frames, a 1-D variable-length uint32 dataset (the flat pixel indices row * cols + col hit in each
//    stored frame; attributes Nx = frame rows, Ny = frame cols, as stempy writes frame_shape[0], [1]);
//    electron_events/scan_positions (attributes Nx = scan cols, Ny = scan rows); root attribute `version` (1 when
//    absent). Version >= 3: the frames are (positions x frames_per_position) flattened; before, frame i lies at
//    scan_positions[i]. Every index counts one electron; the frames of a position are summed.
//  - LiberTEM raw CSR (libertem/io/dataset/raw_csr.py): a TOML descriptor ([params] filetype = "raw_csr",
//    nav_shape, sig_shape; [raw_csr] indptr_file/_dtype, indices_file/_dtype, data_file/_dtype) naming three raw
//    arrays of a scipy CSR matrix (rows: flattened scan positions, columns: flattened detector pixels).
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/source/readers.hpp"

namespace qgpu::io::sparse {

// True for an HDF5 file holding electron_events/frames (asked by the hdf5 reader before its own reading).
bool is_stempy_file(const std::string& path);
FileInfo inspect_stempy(const std::string& path, const SourceOptions& options);

// The first bytes of a LiberTEM raw CSR TOML descriptor: a [params] table and filetype "raw_csr".
bool is_csr_head(const std::uint8_t* head, std::size_t n);
FileInfo inspect_csr(const std::string& path, const SourceOptions& options);

}  // namespace qgpu::io::sparse
