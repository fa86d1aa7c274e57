#pragma once
// Admission of a load: which representation (dense or encoded) the output gets, decided before any work from
// the output's dense size, a conservative estimate of its encoded size and the memory the load would use.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "device/device.hpp"
#include "io/hdf5/load.hpp"

namespace qgpu::io {

struct Admission {
  std::string representation;        // "dense" | "encoded"
  std::size_t dense_bytes = 0;       // the output dense
  std::size_t dense_scratch = 0;     // load buffers beside it (staging for crop/binning)
  std::size_t encoded_estimate = 0;  // the output encoded, estimated conservatively (see estimate_encoded_bytes)
  std::size_t encoded_scratch = 0;   // decode staging, encoder scratch, staging tile
  std::size_t free_bytes = 0;        // free GPU memory (cuda) / available host memory (cpu)
  std::size_t limit_bytes = 0;       // what the load may use: fraction x free, or the given limit
  double fraction = 0.8;
  std::string memory;                // "gpu" | "host"
  nlohmann::json to_json() const;
};

// Conservative encoded size of the plan's output: 1.5 x the compressed file bytes of the selected frames (the
// encoded-v1 form measured ~0.6 x a bitshuffle+LZ4 file), capped by the format's worst case (every stream raw plus
// headers and directories), plus the stored frame totals and sum pattern.
std::size_t estimate_encoded_bytes(const LoadPlan& plan, std::size_t file_bytes);
// Bytes of the files holding the plan's frames (every part once).
std::size_t source_file_bytes(const LoadPlan& plan);
// Free memory where the backend keeps residents: cudaMemGetInfo for cuda, MemAvailable for cpu.
std::size_t free_memory_bytes(Backend backend);

// The decision for `requested` ("auto" | "dense" | "encoded") given `free_bytes`. InvalidArgument naming the
// estimated sizes and the limit when the requested representation (auto: either) does not fit.
Admission admit(const LoadPlan& plan, Backend backend, const std::string& requested, double fraction,
                std::size_t limit_bytes, std::size_t free_bytes, std::size_t file_bytes);

}  // namespace qgpu::io
