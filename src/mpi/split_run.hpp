#pragma once
// MPI scan split (mpirun -n N qgpu image|cache FILE ...): each rank loads a block of scan rows (its slab) onto its
// GPU (device = local rank mod device count) or the CPU reference and computes the slab's share of every product
// that splits over scan rows (sum pattern, masked sums, CoM); rank 0 gathers them exactly (uint64 sums reduced,
// rows concatenated in rank order) and runs the one-process workflow on the gathered products, so it writes what
// one process writes. Whole-field steps (DPC centring, rotation, iDPC) run at rank 0 on the gathered CoM.
//
// Failures: every step ends with a status exchange (MPI_Allreduce); a rank that fails (its slab does not load, a
// product fails) makes rank 0 raise an error naming the rank, its scan rows and the problem, and every rank exits
// nonzero. This header needs no MPI: without MPI built in, run_split raises BackendUnavailable.
#include <functional>
#include <string>

#include "core/error.hpp"
#include "io/hdf5/load.hpp"
#include "workflow/scan_products.hpp"

namespace qgpu::mpi {

// True when Open MPI's mpirun started this process (any -n: even one rank takes the split path), or another
// launcher (MPICH/PMI, Slurm) started it among more than one rank.
bool launched_with_ranks();
// This process's rank as the launcher states it (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), 0 when none does.
int launcher_rank();
// InvalidArgument when started as several ranks for a command that does not split over them (everything but
// image, cache and ssb would run as N copies writing the same outputs).
void check_command_splits(const std::string& command);
// True when this qgpu was built with MPI (CMake found it).
bool built_with_mpi();

// Rank 0 runs `workflow` on the gathered products; the other ranks answer its requests for their slabs. `options`
// is the one-process load (its scan region, bins and flags); every rank loads its rows of that region. Returns on
// every rank when the workflow succeeded; raises on every rank otherwise (rank 0: the error; the others:
// RankStopped).
void run_split(const std::string& file, const io::LoadOptions& options,
               const std::function<void(workflow::ScanProducts&)>& workflow);

// Raised on ranks other than 0 when the run failed; rank 0 reports the cause.
struct RankStopped : Error {
  using Error::Error;
};

}  // namespace qgpu::mpi
