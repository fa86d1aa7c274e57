// Writes the issue-25 hostile files of tests/io/hostile_h5.hpp into a folder, for the CLI tests: the two bases
// (the issue's `qgpu sample s.h5 --scan 8 8 --detector 32 32`, bitshuffle and unfiltered) and one file per case,
// plus manifest.tsv: name, point, the substrings the error must contain (joined by '|'), and
// damaged_calibration.h5 (a damaged group header beside intact data: loads).
// Usage: write_hostile_files DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "hostile_h5.hpp"
#include "io/sample/sample.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_hostile_files DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path dir = argv[1];
  fs::create_directories(dir);
  for (bool compress : {true, false}) {
    qgpu::sample::SampleSpec s;
    s.scan_rows = s.scan_cols = 8;
    s.det_rows = s.det_cols = 32;
    s.compress = compress;
    qgpu::sample::write_sample((dir / (compress ? "base.h5" : "base_plain.h5")).string(), s);
  }
  // Not an error case: the calibration group's header damaged (its symbol table address), the data intact. The load
  // works; HDF5's failed read of the group used to leave state that printed "infinite loop closing library" at exit.
  fs::copy_file(dir / "base.h5", dir / "damaged_calibration.h5", fs::copy_options::overwrite_existing);
  qgpu::test::hostile::flip_object_header_byte((dir / "damaged_calibration.h5").string(), "/entry/calibration", 31);
  std::ofstream manifest(dir / "manifest.tsv");
  for (const auto& c : qgpu::test::hostile::issue25_cases()) {
    const fs::path path = dir / (c.name + ".h5");
    fs::copy_file(dir / (c.plain_base ? "base_plain.h5" : "base.h5"), path, fs::copy_options::overwrite_existing);
    c.edit(path.string(), "/entry/data/data");
    std::string expect;
    for (const auto& e : c.expect) expect += (expect.empty() ? "" : "|") + e;
    manifest << c.name << '\t' << c.point << '\t' << expect << '\n';
  }
  return 0;
}
