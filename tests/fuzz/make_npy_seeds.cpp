// Seeds of fuzz_npy_header: headers numpy writes (versions 1 and 2, every count dtype, 3D and 4D, both orders).
#include <cstdio>
#include <fstream>
#include <string>

#include "io/npy/npy.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  int n = 0;
  for (unsigned version : {1u, 2u})
    for (const char* descr : {"|u1", "<u2", ">u2", "<u4", ">u4", "<f4", "<i2"})
      for (bool fortran : {false, true}) {
        const std::string h = qgpu::io::npy_header(descr, fortran ? std::vector<std::size_t>{256, 256, 192, 192}
                                                                  : std::vector<std::size_t>{65536, 128, 128},
                                                   fortran, version);
        std::ofstream(dir + "/seed_" + std::to_string(n++) + ".npy", std::ios::binary) << h << std::string(64, '\0');
      }
  std::printf("%d seeds\n", n);
  return 0;
}
