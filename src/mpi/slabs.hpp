#pragma once
// How an MPI run splits the scan: contiguous blocks of scan rows, one per rank, in rank order, sizes differing by at
// most one (the first rows % ranks ranks take one row more). Pure arithmetic, no MPI.
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgpu::mpi {

struct Slab {
  std::size_t row0 = 0, rows = 0;  // output scan rows [row0, row0 + rows)
};

// InvalidArgument when ranks < 1 or the scan has fewer rows than ranks (a rank would hold nothing).
std::vector<Slab> split_rows(std::size_t scan_rows, int ranks);

// {"ranks": N, "slabs": [[row0, rows], ...]} for logs and provenance (parameters.mpi).
nlohmann::json describe_slabs(const std::vector<Slab>& slabs);

}  // namespace qgpu::mpi
