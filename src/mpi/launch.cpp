#include <cstdlib>
#include <string>

#include "mpi/split_run.hpp"

namespace qgpu::mpi {

bool launched_with_ranks() {
  // Open MPI's launcher sets this for its ranks only: even -n 1 takes the split path (one slab; benchmarks)
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) return true;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

}  // namespace qgpu::mpi
