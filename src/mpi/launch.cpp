#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "mpi/split_run.hpp"

namespace qgpu::mpi {

namespace {

int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 1;
}

}  // namespace

bool launched_with_ranks() {
  // Open MPI's launcher sets this for its ranks only: even -n 1 takes the split path (one slab; benchmarks)
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) return true;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

void check_command_splits(const std::string& command) {
  if (launcher_size() < 2 || command.empty() || command == "image" || command == "cache" || command == "ssb")
    return;
  for (const char* known : {"info", "sample", "serve", "movie", "parallax"})
    if (command == known)
      throw InvalidArgument("qgpu " + command + " does not split over MPI ranks (only image, cache and ssb do): run it " +
                            "as one process, without mpirun");
}

}  // namespace qgpu::mpi
