#include "mpi/comm.hpp"

#include <mpi.h>

#include <climits>
#include <cstdio>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::mpi {

namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string("MPI: ") + call + " failed: " + std::string(msg, std::size_t(len)));
}

int as_count(std::size_t n, const char* what) {
  if (n > std::size_t(INT_MAX))
    throw InvalidArgument(std::string("MPI: ") + what + " of " + std::to_string(n) +
                          " bytes exceeds one message (2 GiB); use more ranks or bin the scan");
  return int(n);
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

}  // namespace

Session& session() {
  static Session s;
  return s;
}

Session::Session() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) check(MPI_Init(nullptr, nullptr), "MPI_Init");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_free(&local);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host_.assign(name, std::size_t(len));
}

Session::~Session() {
  std::fflush(stdout);  // before the fence: a rank whose peers exit nonzero may be stopped right after it
  std::fflush(stderr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string broadcast(std::string s) {
  unsigned long long n = s.size();
  check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  s.resize(std::size_t(n));
  check(MPI_Bcast(s.data(), as_count(s.size(), "a request"), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return s;
}

bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
  return all != 0;
}

std::vector<std::uint8_t> gather_bytes(const void* data, std::size_t bytes) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool root = world_rank() == 0;
  // Every rank learns every count, so that a total beyond one message raises on every rank alike (no rank left
  // waiting in the gather).
  const unsigned long long mine = bytes;
  std::vector<unsigned long long> counts(std::size_t(size), 0);
  check(MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, counts.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD),
        "MPI_Allgather");
  std::vector<int> icounts(counts.size()), displs(counts.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = as_count(total, "a gathered product");
    icounts[i] = as_count(std::size_t(counts[i]), "a slab's product");
    total += std::size_t(counts[i]);
  }
  as_count(total, "a gathered product");
  std::vector<std::uint8_t> out(root ? total : 0);
  check(MPI_Gatherv(data, int(bytes), MPI_BYTE, out.data(), icounts.data(), displs.data(), MPI_BYTE, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  return out;
}

std::vector<std::string> gather_strings(const std::string& s) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const unsigned long long mine = s.size();
  std::vector<unsigned long long> counts(std::size_t(size), 0);
  check(MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, counts.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD),
        "MPI_Allgather");
  const std::vector<std::uint8_t> all = gather_bytes(s.data(), s.size());
  std::vector<std::string> out;
  if (world_rank() != 0) return out;
  std::size_t at = 0;
  for (unsigned long long c : counts) {
    out.emplace_back(reinterpret_cast<const char*>(all.data()) + at, std::size_t(c));
    at += std::size_t(c);
  }
  return out;
}

std::vector<std::uint64_t> sum_at_root(const std::vector<std::uint64_t>& v) {
  std::vector<std::uint64_t> out(world_rank() == 0 ? v.size() : 0);
  check(MPI_Reduce(v.data(), out.data(), as_count(v.size(), "a summed product"), MPI_UINT64_T, MPI_SUM, 0,
                   MPI_COMM_WORLD),
        "MPI_Reduce");
  return out;
}

}  // namespace qgpu::mpi
