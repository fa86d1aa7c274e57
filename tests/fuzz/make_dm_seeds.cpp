// Seeds of fuzz_dm_tags: small DM3 and DM4 files as GMS lays them out (a thumbnail and a 4D image with Dimensions,
// DataType, Data, Calibrations, Meta Data.Data Order Swapped, Microscope Info.Voltage), both byte orders, a 3D stack
// and a struct-array tag, written byte by byte from the format (tests/python/test_dm.py reads the real writer's).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct W {
  bool dm4, little;
  std::size_t word() const { return dm4 ? 8 : 4; }
  static void be(std::string& o, std::uint64_t v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) o += char(std::uint8_t(v >> (8 * (n - 1 - i))));
  }
  void val(std::string& o, std::uint64_t v, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i) o += char(std::uint8_t(v >> (8 * (little ? i : n - 1 - i))));
  }
  std::string tag(const std::string& name, bool group, const std::string& content) const {
    std::string o;
    o += char(group ? 20 : 21);
    be(o, name.size(), 2);
    o += name;
    if (dm4) be(o, content.size(), 8);
    return o + content;
  }
  std::string group(const std::string& name, const std::vector<std::string>& tags) const {
    std::string c = "\x01";
    c += '\0';
    be(c, tags.size(), word());
    for (const auto& t : tags) c += t;
    return tag(name, true, c);
  }
  std::string data(const std::string& name, const std::vector<std::uint64_t>& info, const std::string& bytes) const {
    std::string c = "%%%%";
    be(c, info.size(), word());
    for (auto w : info) be(c, w, word());
    return tag(name, false, c + bytes);
  }
  std::string u32(const std::string& name, std::uint32_t v) const {
    std::string b;
    val(b, v, 4);
    return data(name, {5}, b);
  }
  std::string text(const std::string& name, const std::string& s) const {
    std::string b;
    for (char ch : s) val(b, std::uint8_t(ch), 2);
    return data(name, {20, 4, s.size()}, b);
  }
  std::string file(const std::vector<std::uint64_t>& dims, bool swapped) const {
    std::uint64_t n = 1;
    std::vector<std::string> d;
    for (auto x : dims) n *= x, d.push_back(u32("", std::uint32_t(x)));
    std::string pixels;
    for (std::uint64_t i = 0; i < n; ++i) val(pixels, i * 7 % 65536, 2);
    std::string f32;
    val(f32, 0x3f800000, 4);
    std::vector<std::string> cal;
    for (std::size_t k = 0; k < dims.size(); ++k)
      cal.push_back(
          group("", {data("Origin", {6}, f32), data("Scale", {6}, f32), text("Units", k < 2 ? "1/nm" : "nm")}));
    std::string volts;
    val(volts, 0x41124f8000000000ull, 8);  // 300000.0
    std::string structs;                   // an array of 2 structs {int16, float32}
    for (int i = 0; i < 2; ++i) val(structs, 1, 2), val(structs, 0x40000000, 4);
    std::vector<std::string> meta = {text("Format", dims.size() == 4 ? "Diffraction image" : "Image")};
    if (swapped) meta.push_back(data("Data Order Swapped", {8}, std::string(1, '\x01')));
    const std::string thumb = group("", {group("ImageData", {data("Data", {20, 10, 4}, "abcd"), u32("DataType", 6),
                                                             group("Dimensions", {u32("", 2), u32("", 2)})})});
    const std::string image = group(
        "", {group("ImageData", {group("Calibrations", {group("Dimension", cal)}), data("Data", {20, 4, n}, pixels),
                                 u32("DataType", 10), group("Dimensions", d)}),
             group("ImageTags", {group("Meta Data", meta), group("Microscope Info", {data("Voltage", {7}, volts)})}),
             data("Marks", {20, 15, 0, 2, 0, 2, 0, 6, 2}, structs)});
    std::string root = "\x01";
    root += '\0';
    be(root, 1, word());
    root += group("ImageList", {thumb, image});
    std::string o;
    be(o, dm4 ? 4 : 3, 4);
    be(o, root.size() + 8, dm4 ? 8 : 4);
    be(o, little ? 1 : 0, 4);
    return o + root + std::string(8, '\0');
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  int n = 0;
  for (bool dm4 : {false, true})
    for (bool little : {true, false}) {
      const W w{dm4, little};
      for (const auto& [dims, swapped] : std::vector<std::pair<std::vector<std::uint64_t>, bool>>{
               {{4, 3, 2, 2}, true}, {{4, 3, 2, 2}, false}, {{3, 3, 5}, false}})
        std::ofstream(dir + "/seed_" + std::to_string(n++) + (dm4 ? ".dm4" : ".dm3"), std::ios::binary)
            << w.file(dims, swapped);
    }
  std::printf("%d seeds\n", n);
  return 0;
}
