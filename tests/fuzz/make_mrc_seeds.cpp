// Seeds of fuzz_mrc: small MRC files written byte by byte from MRC2014 (both byte orders, modes 0 1 2 6, an FEI1 and
// an FEI2 extended-header block with HT, pixel size and camera length, a legacy FEI header of 1024 x 128 bytes, a
// Thermo Fisher Velox-like stack) and Direct Electron movies with an info.txt and a scan-coordinates csv (raster,
// random with gaps and repeats, Scan - Repeats 2); the real DE files of ../shared/data/mrc when present (argv[2]).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_sidecar_files.hpp"

namespace {

void put32(std::string& s, std::size_t off, std::uint32_t v, bool big) {
  for (int i = 0; i < 4; ++i) s[off + std::size_t(i)] = char(std::uint8_t(v >> (8 * (big ? 3 - i : i))));
}
void put64f(std::string& s, std::size_t off, double d, bool big) {
  std::uint64_t v;
  std::memcpy(&v, &d, 8);
  for (int i = 0; i < 8; ++i) s[off + std::size_t(i)] = char(std::uint8_t(v >> (8 * (big ? 7 - i : i))));
}

std::string mrc(int nx, int ny, int nz, int mode, bool big, const std::string& ext, const char* exttyp = nullptr) {
  std::string h(1024, '\0');
  put32(h, 0, std::uint32_t(nx), big);
  put32(h, 4, std::uint32_t(ny), big);
  put32(h, 8, std::uint32_t(nz), big);
  put32(h, 12, std::uint32_t(mode), big);
  put32(h, 92, std::uint32_t(ext.size()), big);
  if (exttyp) std::memcpy(&h[104], exttyp, 4);
  std::memcpy(&h[208], "MAP ", 4);
  h[212] = big ? 0x11 : 0x44;
  h[213] = big ? 0x11 : 0x44;
  const int bytes = mode == 0 ? 1 : mode == 2 ? 4 : 2;
  std::string data(std::size_t(nx) * std::size_t(ny) * std::size_t(nz) * std::size_t(bytes), '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7 % 13);
  return h + ext + data;
}

std::string fei_block(std::size_t size, bool big) {
  std::string b(size, '\0');
  put32(b, 0, std::uint32_t(size), big);
  put32(b, 4, 2, big);
  put64f(b, 84, 300000.0, big);
  put64f(b, 156, 1.5e-10, big);
  put64f(b, 164, 1.5e-10, big);
  put64f(b, 301, 0.12, big);
  return b;
}

std::string de_info(int sx, int sy, const char* type, int repeats = 1) {
  std::ostringstream s;
  s << "Instrument Accelerating Voltage (V)   = 300000\nSpecimen Pixel Size X (nanometers)    = 0.25\n"
       "Specimen Pixel Size Y (nanometers)    = 0.25\nInstrument Project Camera Length (centimeters) = -1\n"
       "Scan - Enable = Enable\nScan - Size X = " << sx << "\nScan - Size Y = " << sy << "\nScan - Type = " << type
    << "\nScan - Repeats = " << repeats << "\n";
  return s.str();
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return f ? std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  using qgpu::fuzz::join_parts;
  std::vector<std::string> seeds = {
      mrc(4, 4, 6, 6, false, ""),
      mrc(3, 2, 4, 1, true, ""),
      mrc(2, 2, 9, 2, false, ""),
      mrc(5, 3, 2, 0, false, ""),
      mrc(4, 4, 4, 6, false, fei_block(640, false) + fei_block(640, false), "FEI1"),
      mrc(4, 4, 2, 1, true, fei_block(512, true), "FEI2"),
      mrc(4, 4, 2, 6, false, std::string(131072, '\0')),
      join_parts({mrc(4, 4, 6, 6, false, ""), de_info(3, 2, "Raster"), "0,0\n1,0\n2,0\n0,1\n1,1\n2,1\n"}),
      join_parts({mrc(4, 4, 6, 6, false, ""), de_info(3, 3, "XY File"), "0,0\n2,2\n1,0\n2,2\n0,2\n1,1\n"}),
      join_parts({mrc(4, 4, 4, 1, false, ""), de_info(2, 2, "Raster", 2)}),
      join_parts({mrc(4, 4, 4, 2, false, ""), de_info(2, 2, "Random")}),
  };
  if (argc > 2) {  // the real Direct Electron custom scan (../shared/data/mrc), when there
    const std::string base = std::string(argv[2]) + "/Custom";
    const std::string m = read_all(base + "_movie.mrc");
    if (!m.empty()) seeds.push_back(join_parts({m, read_all(base + "_info.txt"), read_all(base + "_scan_coordinates.csv")}));
  }
  int n = 0;
  for (const auto& s : seeds)
    std::ofstream(dir + "/seed_" + std::to_string(n++) + ".bin", std::ios::binary).write(s.data(), std::streamsize(s.size()));
  std::printf("%d seeds\n", n);
  return 0;
}
