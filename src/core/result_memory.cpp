#include "core/result_memory.hpp"

#include <cstdint>

namespace qgpu::detail {

// Never destroyed (a result given back during exit stays until the process ends).
template <class T> KeptResults<T>& kept_results() {
  static auto* k = new KeptResults<T>;
  return *k;
}

template KeptResults<std::uint8_t>& kept_results<std::uint8_t>();
template KeptResults<std::int8_t>& kept_results<std::int8_t>();
template KeptResults<std::int16_t>& kept_results<std::int16_t>();
template KeptResults<std::uint16_t>& kept_results<std::uint16_t>();
template KeptResults<std::uint32_t>& kept_results<std::uint32_t>();
template KeptResults<std::uint64_t>& kept_results<std::uint64_t>();
template KeptResults<std::int32_t>& kept_results<std::int32_t>();
template KeptResults<std::int64_t>& kept_results<std::int64_t>();
template KeptResults<float>& kept_results<float>();
template KeptResults<double>& kept_results<double>();

}  // namespace qgpu::detail
