// Writes one seed per chunk index kind for the fuzzer: small datasets written with the HDF5 library, prefixed with
// the sizes and object header address the target expects. Usage: fuzz_make_index_seeds <output dir>
#include <hdf5.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../io/chunk_files.hpp"
#include "io/hdf5/index/dataset_location.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  using qgpu::test::ChunkedSpec;
  const hsize_t U = H5S_UNLIMITED;
  struct Seed {
    const char* name;
    ChunkedSpec spec;
  };
  std::vector<Seed> seeds;
  auto v110 = [](ChunkedSpec s) {
    s.low = s.high = H5F_LIBVER_V110;
    return s;
  };
  ChunkedSpec bt1;
  bt1.dims = {80, 4, 4};
  bt1.max_dims = {U, 4, 4};
  bt1.chunk = {1, 4, 4};
  bt1.deflate = true;
  seeds.push_back({"btree_v1", bt1});
  ChunkedSpec fa = v110({});
  fa.dims = {1100, 2};
  fa.chunk = {1, 2};
  fa.written = [](std::uint64_t i) { return i < 1024 || i > 1050; };
  seeds.push_back({"fixed_array_paged", fa});
  ChunkedSpec ea = v110({});
  ea.dims = {300, 2};
  ea.max_dims = {U, 2};
  ea.chunk = {1, 2};
  ea.deflate = true;
  seeds.push_back({"extensible_array", ea});
  ChunkedSpec bt2 = v110({});
  bt2.dims = {30, 30};
  bt2.max_dims = {U, U};
  bt2.chunk = {2, 2};
  seeds.push_back({"btree_v2", bt2});
  ChunkedSpec single = v110({});
  single.dims = single.chunk = {4, 4};
  single.deflate = true;
  seeds.push_back({"single_filtered", single});
  ChunkedSpec implicit = v110({});
  implicit.dims = {6, 6};
  implicit.chunk = {2, 3};
  implicit.early_alloc = true;
  seeds.push_back({"implicit", implicit});
  for (const auto& s : seeds) {
    const std::string h5 = std::string(argv[1]) + "/" + s.name + ".h5";
    qgpu::test::write_chunked(h5, s.spec);
    hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, s.spec.name.c_str(), H5P_DEFAULT);
    const auto loc = qgpu::io::h5index::locate_dataset(ds);
    H5Dclose(ds);
    H5Fclose(f);
    std::ifstream in(h5, std::ios::binary);
    const std::vector<char> image{std::istreambuf_iterator<char>(in), {}};
    std::ofstream out(std::string(argv[1]) + "/" + s.name + ".seed", std::ios::binary);
    out.put(static_cast<char>(loc.request.sizes.addr | (loc.request.sizes.len << 4)));
    for (int k = 0; k < 8; ++k) out.put(static_cast<char>(loc.request.header_addr >> (8 * k)));
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    std::remove(h5.c_str());
  }
  return 0;
}
