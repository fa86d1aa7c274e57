// Built without MPI (CMake did not find it): the split reports that instead of running one process per rank.
#include "core/error.hpp"
#include "mpi/split_run.hpp"

namespace qgpu::mpi {

bool built_with_mpi() { return false; }

void run_split(const std::string&, const io::LoadOptions&, const std::function<void(workflow::ScanProducts&)>&) {
  throw BackendUnavailable(
      "started as several MPI ranks, but this qgpu was built without MPI (install libopenmpi-dev and rebuild); "
      "run it as one process");
}

}  // namespace qgpu::mpi
