#pragma once
// The few MPI calls the scan split needs, over MPI_COMM_WORLD, with MPI errors turned into exceptions.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::mpi {

// MPI_Init on construction, MPI_Finalize on destruction (one per process).
class Session;
// The process's session: made on first use, finalized at exit, after main has printed any error. MPI_Finalize
// waits for every rank, so no rank can exit (nonzero, making mpirun stop the others) before rank 0 has reported.
Session& session();

class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the processes of this host
  std::string host() const { return host_; }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::string host_;
};

// Rank 0's string to every rank.
std::string broadcast(std::string s);
// true on every rank when `ok` is true on every rank (MPI_Allreduce, logical and).
bool all_ok(bool ok);
// Every rank's string at rank 0 (rank order); empty elsewhere.
std::vector<std::string> gather_strings(const std::string& s);
// Every rank's bytes concatenated in rank order at rank 0; empty elsewhere. A total over one MPI message (2 GiB)
// raises InvalidArgument on every rank.
std::vector<std::uint8_t> gather_bytes(const void* data, std::size_t bytes);
// Element-wise uint64 sums over the ranks at rank 0 (exact, wrapping like one process's uint64 sums).
std::vector<std::uint64_t> sum_at_root(const std::vector<std::uint64_t>& v);

}  // namespace qgpu::mpi
