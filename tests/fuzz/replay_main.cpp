// Runs the fuzz target over the files named on the command line (for compilers without libFuzzer, and as a test).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    const std::vector<std::uint8_t> b{std::istreambuf_iterator<char>(in), {}};
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  std::printf("replayed %d inputs\n", argc - 1);
  return 0;
}
