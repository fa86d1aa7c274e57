// Seeds of fuzz_csr_toml: LiberTEM raw CSR descriptors as libertem/io/dataset/raw_csr.py reads them (comments,
// quoted keys, both quote styles, every index dtype, big-endian and float data, a filetype table spelled RAW_CSR)
// with consistent indptr / indices / data arrays, and the parser's edge cases (an unterminated array, a 1-D shape).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_sidecar_files.hpp"

namespace {

std::string le(const std::vector<std::uint64_t>& v, std::size_t n, bool big = false) {
  std::string o;
  for (auto x : v)
    for (std::size_t i = 0; i < n; ++i) o += char(std::uint8_t(x >> (8 * (big ? n - 1 - i : i))));
  return o;
}

std::string toml(const std::string& nav, const std::string& sig, const std::string& ip, const std::string& ix,
                 const std::string& dt, const std::string& filetype = "raw_csr") {
  return "# LiberTEM raw CSR\n[params]\nfiletype = \"" + filetype + "\"\nnav_shape = " + nav + "\nsig_shape = " + sig +
         "\n\n[" + filetype + "]\nindptr_file = \"indptr.raw\"\nindptr_dtype = \"" + ip +
         "\"\nindices_file = 'indices.raw'\nindices_dtype = \"" + ix + "\"  # column indices\n\"data_file\" = \"data.raw\"\n"
         "data_dtype = \"" + dt + "\"\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  using qgpu::fuzz::join_parts;
  // 2 x 2 positions of 3 x 3 pixels: rows with 2, 0, 1, 3 events.
  const std::vector<std::uint64_t> indptr = {0, 2, 2, 3, 6}, indices = {0, 8, 4, 1, 2, 3}, values = {1, 2, 1, 5, 1, 1};
  const std::vector<std::string> seeds = {
      join_parts({toml("[2, 2]", "[3, 3]", "<i8", "<i4", "<u2"), le(indptr, 8), le(indices, 4), le(values, 2)}),
      join_parts({toml("[4, 1]", "[3,3]", "uint32", ">u4", "uint8"), le(indptr, 4), le(indices, 4, true), le(values, 1)}),
      join_parts({toml("[1, 4]", "[ 9, 1 ]", ">i4", "<u8", "<f4"), le(indptr, 4, true), le(indices, 8),
                  le({0x3f800000, 0x40000000, 0x3f800000, 0x40a00000, 0x3f800000, 0x3f800000}, 4)}),
      join_parts({toml("[2, 2]", "[3, 3]", "<u4", "<u4", "<f8", "RAW_CSR"), le(indptr, 4), le(indices, 4),
                  le({0x3ff0000000000000ull, 0, 0, 0, 0, 0}, 8)}),
      join_parts({toml("[4]", "[3, 3]", "<i8", "<i4", "<u2"), le(indptr, 8), le(indices, 4), le(values, 2)}),
      join_parts({"[params]\nfiletype = 'raw_csr'\nnav_shape = [2,\n 2]\n", "", "", ""}),
      "\n# only comments\n[params] # x\nfiletype = \"raw_csr\"\n",
  };
  int n = 0;
  for (const auto& s : seeds)
    std::ofstream(dir + "/seed_" + std::to_string(n++) + ".bin", std::ios::binary).write(s.data(), std::streamsize(s.size()));
  std::printf("%d seeds\n", n);
  return 0;
}
