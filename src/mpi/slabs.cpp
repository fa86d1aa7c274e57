#include "mpi/slabs.hpp"

#include <string>

#include "core/error.hpp"

namespace qgpu::mpi {

std::vector<Slab> split_rows(std::size_t scan_rows, int ranks) {
  if (ranks < 1) throw InvalidArgument("an MPI split needs at least one rank, got " + std::to_string(ranks));
  const std::size_t n = std::size_t(ranks);
  if (scan_rows < n)
    throw InvalidArgument("the scan has " + std::to_string(scan_rows) + " rows: too few to split over " +
                          std::to_string(ranks) + " MPI ranks (one row each at least); run fewer ranks");
  std::vector<Slab> slabs(n);
  std::size_t row = 0;
  for (std::size_t r = 0; r < n; ++r) {
    slabs[r].row0 = row;
    slabs[r].rows = scan_rows / n + (r < scan_rows % n ? 1 : 0);
    row += slabs[r].rows;
  }
  return slabs;
}

nlohmann::json describe_slabs(const std::vector<Slab>& slabs) {
  nlohmann::json s = nlohmann::json::array();
  for (const Slab& x : slabs) s.push_back({x.row0, x.rows});
  return {{"ranks", slabs.size()}, {"slabs", s}};
}

}  // namespace qgpu::mpi
