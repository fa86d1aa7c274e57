// Hostile files (issue 10): absurd shapes, bad scan_shape attributes, files that are not regular files,
// unreadable, truncated or compressed with a missing filter. Each gets a typed error naming the problem: never a
// crash, a hang or data that looks valid.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>

#include "corrupt.hpp"
#include "device/device.hpp"
#include "hostile_h5.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/index/chunk_table.hpp"
#include "io/hdf5/index/hdf5_api_fallback.hpp"
#include "io/hdf5/load.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using qgpu::test::expect_error;
namespace fs = std::filesystem;

namespace {

io::LoadOptions cpu() {
  io::LoadOptions o;
  o.backend = "cpu";
  return o;
}

// A chunked uint8 dataset /data of the given dims, one element per chunk along the leading axes, nothing written
// (HDF5 allocates chunks lazily, so absurd shapes cost nothing on disk).
void write_chunked(const std::string& path, std::vector<hsize_t> dims, std::vector<hsize_t> chunk,
                   const std::function<void(hid_t)>& decorate = {}, std::vector<hsize_t> maxdims = {}) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), maxdims.empty() ? nullptr : maxdims.data());
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
  hid_t d = H5Dcreate2(f, "/data", H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(d, 0) << "HDF5 refused to create the test dataset";
  if (decorate) decorate(d);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Fclose(f);
}

void add_attribute(hid_t obj, const char* name, hid_t type, std::vector<hsize_t> dims, const void* data) {
  hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  hid_t a = H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, data);
  H5Aclose(a);
  H5Sclose(sp);
}

// A 16-frame (16, 8, 8) dataset carrying a scan_shape attribute written by `attr`.
std::string rank3_with_scan_shape(const std::string& name, const std::function<void(hid_t)>& attr) {
  const std::string path = test::temp_path(name);
  write_chunked(path, {16, 8, 8}, {1, 8, 8}, attr);
  return path;
}

sample::SampleSpec small() {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 4;
  s.det_rows = s.det_cols = 16;
  return s;
}

}  // namespace

TEST(HostileFiles, ShapeProductsOverflow) {
  const hsize_t two32 = hsize_t(1) << 32;
  for (auto dims : {std::vector<hsize_t>{two32, two32, 1, 1}, std::vector<hsize_t>{two32 * 2, two32 / 2, 1, 1}}) {
    const std::string path = test::temp_path("huge" + std::to_string(dims[0]) + ".h5");
    write_chunked(path, dims, {1, 1, 1, 1});
    expect_error<FormatError>([&] { io::inspect(path); }, {"'/data'", "overflows 64 bits"});
    expect_error<FormatError>([&] { io::load(path, cpu()); }, {"overflows 64 bits"});
    io::LoadOptions cuda;
    cuda.backend = "cuda";
    // The CUDA path plans the same way; without a GPU the backend check comes first.
    try {
      io::load(path, cuda);
      ADD_FAILURE() << "no exception";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("overflows"), std::string::npos) << e.what();
    } catch (const BackendUnavailable&) {
    }
  }
}

TEST(HostileFiles, ShapeBeyondAnyMemory) {
  // 2^24 x 2^24 x 32 x 16 uint8 = 2^57 bytes fits 64 bits but no memory: named before any allocation.
  const std::string path = test::temp_path("big.h5");
  write_chunked(path, {hsize_t(1) << 24, hsize_t(1) << 24, 32, 16}, {1, 1, 32, 16});
  expect_error<FormatError>([&] { io::inspect(path); }, {"beyond any memory", "16777216x16777216x32x16"});
}

TEST(ShapeArithmetic, ProductsAreChecked) {
  const Shape4D ok{3, 5, 7, 11};
  EXPECT_EQ(ok.frames(), 15u);
  EXPECT_EQ(ok.elements(), 15u * 77u);
  EXPECT_EQ(ok.nbytes(2), 15u * 77u * 2u);
  const std::size_t big = std::size_t(1) << 32;
  EXPECT_THROW((Shape4D{big, big, 1, 1}.frames()), FormatError);
  EXPECT_THROW((Shape4D{1, 1, big, big}.frame_pixels()), FormatError);
  EXPECT_THROW((Shape4D{big, 1, big, 1}.elements()), FormatError);
  EXPECT_THROW((Shape4D{big, 1, big / 2, 1}.nbytes(4)), FormatError);  // 2^65 bytes
  EXPECT_EQ(checked_add(1, 2, "x"), 3u);
  expect_error<RegionError>([] { checked_add<RegionError>(std::numeric_limits<std::uint64_t>::max(), 1, "row end"); },
                            {"row end overflows 64 bits", "18446744073709551615 + 1"});
}

TEST(HostileFiles, ScanShapeAttribute) {
  // [2^62 + 4, 4] wraps to 16 in 64 bits, exactly the frame count: must not be accepted.
  const long long wrap[2] = {(1LL << 62) + 4, 4};
  const std::string pw = rank3_with_scan_shape("wrap.h5", [&](hid_t d) {
    add_attribute(d, "scan_shape", H5T_NATIVE_LLONG, {2}, wrap);
  });
  expect_error<FormatError>([&] { io::inspect(pw); }, {"scan_shape", "overflows 64 bits"});

  const long long neg[2] = {-4, -4};
  const std::string pn = rank3_with_scan_shape("neg.h5", [&](hid_t d) {
    add_attribute(d, "scan_shape", H5T_NATIVE_LLONG, {2}, neg);
  });
  expect_error<FormatError>([&] { io::inspect(pn); }, {"invalid scan_shape attribute", "-4x-4", "positive"});

  const long long three[3] = {4, 4, 1};
  const std::string p3 = rank3_with_scan_shape("three.h5", [&](hid_t d) {
    add_attribute(d, "scan_shape", H5T_NATIVE_LLONG, {3}, three);
  });
  expect_error<FormatError>([&] { io::inspect(p3); }, {"invalid scan_shape attribute", "3 values"});

  const std::string ps = rank3_with_scan_shape("string.h5", [&](hid_t d) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 4);
    add_attribute(d, "scan_shape", t, {1}, "4,4\0");
    H5Tclose(t);
  });
  expect_error<FormatError>([&] { io::inspect(ps); }, {"invalid scan_shape attribute", "not integers"});

  const long long good[2] = {2, 8};
  const std::string pg = rank3_with_scan_shape("good.h5", [&](hid_t d) {
    add_attribute(d, "scan_shape", H5T_NATIVE_LLONG, {2}, good);
  });
  const io::FileInfo fi = io::inspect(pg);
  EXPECT_EQ(fi.shape, (Shape4D{2, 8, 8, 8}));
  EXPECT_EQ(fi.scan_shape_source, "attribute scan_shape");
}

TEST(HostileFiles, GivenScanShapeOverflow) {
  const std::string path = rank3_with_scan_shape("given.h5", {});
  const std::size_t big = std::size_t(1) << 62;
  expect_error<RegionError>([&] { io::inspect(path, "", big + 4, 4); }, {"given scan shape", "overflows"});
  expect_error<FormatError>([&] { io::inspect(path, "", 3, 4); }, {"does not match the 16 frames"});
}

TEST(HostileFiles, ZeroFrames) {
  const std::string path = test::temp_path("empty.h5");
  write_chunked(path, {0, 8, 8}, {1, 8, 8}, {}, {H5S_UNLIMITED, 8, 8});
  expect_error<FormatError>([&] { io::inspect(path); }, {"'/data'", "holds no frames"});
}

TEST(HostileFiles, SymlinkLoop) {
  const std::string path = test::temp_path("loop.h5");
  fs::remove(path);
  fs::create_symlink(fs::path(path).filename(), path);
  expect_error<IoError>([&] { io::inspect(path); }, {"cannot access", path});
  expect_error<IoError>([&] { io::load(path, cpu()); }, {"cannot access", path});
}

TEST(HostileFiles, NotRegularFiles) {
  const std::string fifo = test::temp_path("fifo.h5");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading blocks until a writer comes: it must be refused without being opened.
  expect_error<IoError>([&] { io::inspect(fifo); }, {"named pipe", "not a regular file", fifo});
  const std::string dir = test::temp_path("dir.h5");
  fs::create_directories(dir);
  expect_error<IoError>([&] { io::inspect(dir); }, {"a directory"});
}

TEST(HostileFiles, PermissionDenied) {
  const std::string path = test::write_small_sample("private.h5", small());
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  // As root every file is readable: check as an unprivileged user in a child process.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(3);
    try {
      io::inspect(path);
      ::_exit(2);
    } catch (const IoError& e) {
      ::_exit(std::string(e.what()).find("permission denied") != std::string::npos ? 0 : 4);
    } catch (...) {
      ::_exit(5);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no error, 3: setuid failed, 4: message lacks 'permission denied', 5: other";
}

TEST(HostileFiles, TruncatedNamesBothSizes) {
  const std::string path = test::write_small_sample("trunc.h5", small());
  const std::uintmax_t full = fs::file_size(path);
  fs::resize_file(path, full / 2);
  expect_error<IoError>([&] { io::inspect(path); },
                        {"truncated", std::to_string(full) + " bytes", "the file has " + std::to_string(full / 2)});
}

TEST(HostileFiles, MissingFilterIsNamed) {
  for (auto [id, name] : {std::pair<H5Z_filter_t, std::string>{32001, "blosc"}, {32099, "unknown"}}) {
    if (H5Zfilter_avail(id) > 0) continue;  // a plugin for it is installed here
    const std::string path = test::temp_path("filter" + std::to_string(id) + ".h5");
    // A do-nothing filter registered under `id` only while writing, so the file names a filter this process lacks.
    H5Z_class2_t cls{H5Z_CLASS_T_VERS, id, 1, 1, "test filter", nullptr, nullptr,
                     [](unsigned, size_t, const unsigned[], size_t nbytes, size_t*, void**) { return nbytes; }};
    ASSERT_GE(H5Zregister(&cls), 0);
    {
      hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      hsize_t dims[3] = {4, 8, 8}, chunk[3] = {1, 8, 8};
      hid_t sp = H5Screate_simple(3, dims, nullptr);
      hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(dcpl, 3, chunk);
      H5Pset_filter(dcpl, id, H5Z_FLAG_MANDATORY, 0, nullptr);
      hid_t d = H5Dcreate2(f, "/data", H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      std::vector<std::uint8_t> ones(4 * 64, 1);
      H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ones.data());
      H5Dclose(d);
      H5Pclose(dcpl);
      H5Sclose(sp);
      H5Fclose(f);
    }
    ASSERT_GE(H5Zunregister(id), 0);
    const io::FileInfo fi = io::inspect(path);
    ASSERT_EQ(fi.filters.size(), 1u);
    EXPECT_EQ(fi.filters[0].id, int(id));
    EXPECT_EQ(fi.filters[0].name, name);
    expect_error<FormatError>([&] { io::load(path, cpu()); },
                              {"HDF5 filter " + name + " (id " + std::to_string(id) + ")", "not available"});
  }
}

TEST(HostileFiles, DiscoverySkipsGroupNamedData) {
  // /data is a group; the 4D-STEM dataset sits elsewhere: discovery must search on and find it.
  const std::string path = test::temp_path("group.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(f, "/data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Gclose(H5Gcreate2(f, "/scan", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  hsize_t dims[3] = {9, 4, 4};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  hid_t d = H5Dcreate2(f, "/scan/frames", H5T_STD_U16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<std::uint16_t> v(9 * 16);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::uint16_t(i);
  H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d);
  H5Sclose(sp);
  H5Fclose(f);
  const io::FileInfo fi = io::inspect(path);
  EXPECT_EQ(fi.dataset_path, "/scan/frames");
  EXPECT_EQ(fi.shape, (Shape4D{3, 3, 4, 4}));
  const Dataset ds = io::load(path, cpu());
  EXPECT_EQ(ds.host_bytes().size(), v.size() * 2);
  EXPECT_EQ(reinterpret_cast<const std::uint16_t*>(ds.host_bytes().data())[143], 143);
}

TEST(HostileFiles, LinkCycleWithReferenceCountOneEnds) {
  // Found by fuzz_inspect: a group holding a hard link to itself whose object header says it has one link.
  // H5Ovisit follows such a cycle forever (it tracks only objects with several links): discovery must end and
  // find the dataset behind it.
  const std::string path = test::temp_path("cycle.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);  // v1 object headers
  hid_t g = H5Gcreate2(f, "/a", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Lcreate_hard(g, ".", g, "loop", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Gclose(g);
  H5Gclose(H5Gcreate2(f, "/scan", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  hsize_t dims[3] = {4, 2, 2};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  H5Dclose(H5Dcreate2(f, "/scan/frames", H5T_STD_U16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(sp);
  haddr_t group_addr = HADDR_UNDEF;
  h5::visit_objects(f, [&](const std::string& p, H5O_type_t, haddr_t a) {
    if (p == "/a") group_addr = a;
    return false;
  });
  H5Fclose(f);
  ASSERT_NE(group_addr, HADDR_UNDEF);
  // Version 1 object header: version, reserved, 2-byte message count, then the 4-byte reference count (LE).
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char h[8];
    io.seekg(std::streamoff(group_addr));
    io.read(reinterpret_cast<char*>(h), 8);
    ASSERT_EQ(h[0], 1);
    ASSERT_EQ(h[4] | (h[5] << 8) | (h[6] << 16) | (h[7] << 24), 2);  // "/a" and "/a/loop"
    const char one[4] = {1, 0, 0, 0};
    io.seekp(std::streamoff(group_addr + 4));
    io.write(one, 4);
  }
  EXPECT_EQ(io::discover(path), std::vector<std::string>{"/scan/frames"});
  const io::FileInfo fi = io::inspect(path);
  EXPECT_EQ(fi.dataset_path, "/scan/frames");
  EXPECT_EQ(fi.shape, (Shape4D{2, 2, 2, 2}));
}

TEST(HostileFiles, NamesThatAreNotUtf8DumpAsJson) {
  // Found by fuzz_inspect: a dataset (and calibration attribute) named by bytes that are not UTF-8 made
  // FileInfo::to_json().dump() (qgpu info --json, every provenance) throw nlohmann's type_error.
  const std::string path = test::temp_path("names.h5");
  const std::string bad = "\x9c\x9e\x8b\x9f";
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[4] = {2, 3, 4, 4};
  hid_t sp = H5Screate_simple(4, dims, nullptr);
  H5Dclose(H5Dcreate2(f, ("/" + bad).c_str(), H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(sp);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t g = H5Gcreate2(f, "/entry/calibration", lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  hid_t s1 = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(g, ("px" + bad).c_str(), H5T_IEEE_F64LE, s1, H5P_DEFAULT, H5P_DEFAULT);
  const double half = 0.5;
  H5Awrite(a, H5T_NATIVE_DOUBLE, &half);
  H5Aclose(a);
  H5Sclose(s1);
  H5Gclose(g);
  H5Fclose(f);
  const io::FileInfo fi = io::inspect(path);
  EXPECT_EQ(fi.dataset_path, "/" + bad);  // the real name, to open it by
  EXPECT_EQ(fi.shape, (Shape4D{2, 3, 4, 4}));
  std::string text;
  ASSERT_NO_THROW(text = fi.to_json().dump());
  const std::string fffd4 = "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";  // one U+FFFD per bad byte
  EXPECT_NE(text.find("\"dataset_path\":\"/" + fffd4 + "\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"px" + fffd4 + "\":0.5"), std::string::npos) << text;
}

TEST(RegionArithmetic, WrappingRegionsAreOutOfBounds) {
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  // row0 + rows wraps to a small number: previously accepted (wrong column, segfault or a "corrupt chunk").
  expect_error<RegionError>([&] { resolve_region({0, max - 999, 1, 1000005}, 32, 32, "detector"); },
                            {"detector region", "out of bounds"});
  expect_error<RegionError>([&] { resolve_region({0, max, 32, 1}, 32, 32, "detector"); }, {"out of bounds"});
  expect_error<RegionError>([&] { resolve_region({max, 0, 2, 4}, 4, 4, "scan"); }, {"scan region", "out of bounds"});
  expect_error<RegionError>([&] { resolve_region({1, 0, max, 4}, 4, 4, "scan"); }, {"out of bounds"});
  EXPECT_EQ(resolve_region({1, 2, 3, 2}, 4, 4, "scan"), (Region{1, 2, 3, 2}));
  EXPECT_EQ(resolve_region({0, 0, 4, 4}, 4, 4, "scan"), (Region{0, 0, 4, 4}));

  const std::string path = test::write_small_sample("s.h5", small());
  io::LoadOptions o = cpu();
  o.detector_region = {0, max, 16, 1};
  expect_error<RegionError>([&] { io::load(path, o); }, {"detector region", "out of bounds"});
  o.detector_region = {};
  o.scan_region = {max - 1, 0, 3, 4};
  expect_error<RegionError>([&] { io::load(path, o); }, {"scan region", "out of bounds"});
}

// ---- Second campaign (issue 25): the read path. The cases come from the generator (hostile_h5.hpp), each a byte
// edit of a sample written as the issue's (`qgpu sample s.h5 --scan 8 8 --detector 32 32`).

namespace {

sample::SampleSpec issue25_spec(bool compress) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 8;
  s.det_rows = s.det_cols = 32;
  s.compress = compress;
  return s;
}

// A fresh copy of the case's base file with its edit applied.
std::string make_case(const test::hostile::Case& c) {
  const std::string path = test::temp_path(c.name + ".h5");
  sample::write_sample(path, issue25_spec(!c.plain_base));
  c.edit(path, "/entry/data/data");
  return path;
}

std::size_t open_hdf5_ids() { return std::size_t(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL)); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

void expect_all(const std::string& text, const std::vector<std::string>& needles, const std::string& what) {
  for (const std::string& n : needles) EXPECT_NE(text.find(n), std::string::npos) << what << ": " << text;
}

}  // namespace

TEST(HostileFiles25, EveryCaseIsAClearErrorOnEveryLoadPath) {
  // Before: the chunk wider than the frame crashed the cpu load (SIGSEGV in H5Dread) or, 64 wide, returned garbage;
  // swapped B-tree keys and the short unfiltered chunk loaded silently (frames swapped / padded); the bitshuffle
  // element size 0 was a SIGFPE in the plugin, the chunk stating half its frame gave garbage frames.
  for (const auto& c : test::hostile::issue25_cases()) {
    SCOPED_TRACE(c.name);
    const std::string path = make_case(c);
    for (const std::string decoder : {"auto", "quantem", "hdf5"}) {
      io::LoadOptions o = cpu();
      o.decoder = decoder;
      try {
        io::load(path, o);
        ADD_FAILURE() << c.name << " loaded with decoder " << decoder;
      } catch (const FormatError& e) {
        expect_all(e.what(), c.expect, "decoder " + decoder);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "decoder " << decoder << ": not a FormatError: " << e.what();
      }
      EXPECT_EQ(open_hdf5_ids(), 0u) << "decoder " << decoder;
    }
    io::LoadOptions cuda;
    cuda.backend = "cuda";
    const std::string gpu = error_of([&] { io::load(path, cuda); });
    if (detect().cuda_available) expect_all(gpu, c.expect, "cuda");
    EXPECT_EQ(open_hdf5_ids(), 0u);
  }
}

TEST(HostileFiles25, DamagedIndexIsNamedByInspectAndNotCalledUnfinished) {
  for (const auto& c : test::hostile::issue25_cases()) {
    if (c.point != "1" && c.point != "4") continue;  // the others leave the index intact or fail opening
    SCOPED_TRACE(c.name);
    const std::string path = make_case(c);
    const io::FileInfo fi = io::inspect(path);
    EXPECT_FALSE(fi.ready);
    expect_all(fi.index_error, c.expect, "index_error");
    EXPECT_EQ(fi.to_json()["index_error"].get<std::string>(), fi.index_error);
    expect_error<FormatError>([&] { io::read_chunk_table(path, "/entry/data/data"); }, {"'/entry/data/data'"});
    const std::string load = error_of([&] { io::load(path, cpu()); });
    expect_all(load, {"the file is damaged, not unfinished"}, "load");
    EXPECT_EQ(load.find("not ready"), std::string::npos) << load;
    EXPECT_EQ(open_hdf5_ids(), 0u);
  }
  // A file whose writer has not finished: 60 of 64 chunks written, said so.
  const std::string path = test::temp_path("unfinished.h5");
  write_chunked(path, {64, 8, 8}, {1, 8, 8});
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/data", H5P_DEFAULT);
    const std::vector<std::uint8_t> frame(64, 7);
    for (hsize_t i = 0; i < 60; ++i) {
      hsize_t off[3] = {i, 0, 0};
      H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, frame.size(), frame.data());
    }
    H5Dclose(d);
    H5Fclose(f);
  }
  const io::FileInfo fi = io::inspect(path);
  EXPECT_FALSE(fi.ready);
  EXPECT_EQ(fi.index_error, "");
  EXPECT_EQ(fi.chunks_written, 60u);
  expect_error<FormatError>([&] { io::load(path, cpu()); },
                            {"is not ready: 60 of 64 chunks written (file incomplete or still being written)"});
}

TEST(HostileFiles25, HdfApiFallbackTableGetsTheSameChecks) {
  // The HDF5 API fallback (indexes our parser does not read) checks what our parser checks.
  const auto cases = test::hostile::issue25_cases();
  const auto it = std::find_if(cases.begin(), cases.end(), [](const auto& c) { return c.name == "short_unfiltered_chunk"; });
  ASSERT_NE(it, cases.end());
  const std::string path = make_case(*it);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/entry/data/data", H5P_DEFAULT);
  io::ChunkTable t;
  t.file = path;
  t.dataset_path = "/entry/data/data";
  t.dims = {64, 32, 32};
  t.chunk_dims = {1, 32, 32};
  expect_error<FormatError>([&] { io::h5index::fill_from_hdf5_api(d, t, 0, "test"); },
                            {"chunk 2 is stored unfiltered in 1948 bytes; an unfiltered chunk holds 2048"});
  H5Dclose(d);
  H5Fclose(f);
}

TEST(HostileFiles25, DamagedChunkNeverReachesTheBitshufflePlugin) {
  // The plugin's LZ4_decompress_fast trusts the stream; before, these decoded to nondeterministic frames through
  // --decoder hdf5 or died in the plugin. Our codec checks each chunk the load reads first.
  for (test::Damage d : {test::Damage::header_size, test::Damage::truncated, test::Damage::garbage,
                         test::Damage::block_length}) {
    const std::string path = test::write_small_sample("c" + std::to_string(int(d)) + ".h5", issue25_spec(true));
    test::rewrite_chunk(path, 9, [&](auto& b) { test::damage(b, d); });
    io::LoadOptions o = cpu();
    o.decoder = "hdf5";
    expect_error<FormatError>([&] { io::load(path, o); }, {"'/entry/data/data'", "chunk 9 is damaged ("});
    o.scan_region = {2, 0, 6, 8};  // frames 16..63: the damaged chunk is not read, the load is exact
    const Dataset ds = io::load(path, o);
    o.decoder = "quantem";
    EXPECT_EQ(ds.host_bytes(), io::load(path, o).host_bytes());
    EXPECT_EQ(open_hdf5_ids(), 0u);
  }
}

TEST(HostileFiles25, DamagedObjectHeaderIsNotAMissingDataset) {
  // Before: "no 4D-STEM dataset (integer, rank 3 or 4) found" for a file whose dataset is there but damaged.
  const std::string path = test::temp_path("header.h5");
  sample::write_sample(path, issue25_spec(true));
  test::hostile::set_object_header_byte(path, "/entry/data/data", 0, 7);  // version 1 header: version byte
  expect_error<FormatError>([&] { io::inspect(path); },
                            {"the object header of '/entry/data/data' in '" + path + "' is damaged"});
  expect_error<FormatError>([&] { io::load(path, cpu()); }, {"the object header of '/entry/data/data'"});
  EXPECT_EQ(open_hdf5_ids(), 0u);
  // Found by discovery (no default path): the damaged candidate is named.
  const std::string found = test::temp_path("discover.h5");
  {
    hid_t f = H5Fcreate(found.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "/scan", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    hsize_t dims[3] = {4, 2, 2};
    hid_t sp = H5Screate_simple(3, dims, nullptr);
    H5Dclose(H5Dcreate2(f, "/scan/frames", H5T_STD_U16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(sp);
    H5Fclose(f);
  }
  test::hostile::set_object_header_byte(found, "/scan/frames", 0, 7);
  expect_error<FormatError>([&] { io::inspect(found); },
                            {"no readable 4D-STEM dataset in '" + found + "'", "'/scan/frames'", "is damaged"});
  EXPECT_EQ(open_hdf5_ids(), 0u);
}

namespace {

// Runs `hold(path)` in a child process that then signals readiness and waits until told to end; returns the
// child's pid and the pipe to end it.
struct Writer {
  pid_t pid = -1;
  int go = -1;
  ~Writer() {
    if (go >= 0) ::close(go);  // the child reads EOF and leaves
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
};

void start_writer(Writer& w, const std::function<void()>& hold, bool stay) {
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  w.pid = ::fork();
  ASSERT_GE(w.pid, 0);
  if (w.pid == 0) {
    ::close(ready[0]);
    ::close(go[1]);
    hold();
    const char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(3);
    if (stay) {
      char x;
      while (::read(go[0], &x, 1) > 0) {
      }
    }
    ::_exit(0);  // leaves without closing: a writer that stopped without closing its file
  }
  ::close(ready[1]);
  ::close(go[0]);
  w.go = go[1];
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
}

}  // namespace

TEST(HostileFiles25, FileHeldByAWriterIsNotADamagedSuperblock) {
  // Before: "cannot open HDF5 file ... (damaged superblock or metadata)" for each of these.
  const std::string locked = test::temp_path("locked.h5");
  sample::write_sample(locked, issue25_spec(true));
  {
    Writer w;
    start_writer(w, [&] { H5Fopen(locked.c_str(), H5F_ACC_RDWR, H5P_DEFAULT); }, true);
    expect_error<IoError>([&] { io::inspect(locked); }, {"'" + locked + "' is locked by another process"});
    expect_error<IoError>([&] { io::load(locked, cpu()); }, {"locked by another process"});
  }
  EXPECT_NO_THROW(io::inspect(locked));  // the writer has gone

  // The v3 superblock records that a writer has the file open; a writer that stopped without closing leaves it set.
  auto latest = [&](const std::string& name) {
    const std::string p = test::temp_path(name);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[3] = {4, 8, 8}, chunk[3] = {1, 8, 8};
    hid_t sp = H5Screate_simple(3, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, chunk);
    hid_t d = H5Dcreate2(f, "/data", H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    const std::vector<std::uint8_t> v(256, 1);
    H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(f);
    H5Pclose(fapl);
    return p;
  };
  const std::string crashed = latest("crashed.h5");
  {
    Writer w;
    start_writer(w, [&] { H5Fopen(crashed.c_str(), H5F_ACC_RDWR, H5P_DEFAULT); }, false);
  }
  expect_error<IoError>([&] { io::inspect(crashed); }, {"'" + crashed + "' is marked open for writing", "h5clear -s"});

  const std::string swmr = latest("swmr.h5");
  {
    Writer w;
    start_writer(w, [&] {
      hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
      H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
      H5Fopen(swmr.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl);
    }, true);
    expect_error<IoError>([&] { io::inspect(swmr); }, {"'" + swmr + "' is marked open for writing by a SWMR writer"});
  }
  EXPECT_EQ(open_hdf5_ids(), 0u);
}

TEST(HostileFiles25, NoErrorLeavesHdf5ObjectsOpenAtExit) {
  // Every hostile case through inspect and every load path, in a child that then exits normally: HDF5 closes the
  // library at exit and prints "infinite loop closing library" when an error path left an object open.
  std::vector<std::string> files;
  for (const auto& c : test::hostile::issue25_cases()) files.push_back(make_case(c));
  const std::string header = test::temp_path("header.h5");
  sample::write_sample(header, issue25_spec(true));
  test::hostile::set_object_header_byte(header, "/entry/data/data", 0, 7);
  files.push_back(header);
  for (const auto& e : fs::directory_iterator(fs::path(QGPU_SOURCE_DIR) / "tests/fuzz/known_hdf5_crashes"))
    if (e.path().extension() == ".h5") files.push_back(e.path().string());
  const std::string log = test::temp_path("stderr.txt");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* err = std::freopen(log.c_str(), "w", stderr);
    if (!err) ::_exit(3);
    int loaded = 0;
    for (const std::string& f : files) {
      try {
        io::inspect(f);
      } catch (const Error&) {
      }
      for (const char* decoder : {"auto", "quantem", "hdf5"}) {
        io::LoadOptions o = cpu();
        o.decoder = decoder;
        try {
          io::load(f, o);
          ++loaded;
        } catch (const Error&) {
        }
      }
    }
    std::fflush(stderr);
    std::exit(loaded == 0 ? 0 : 4);  // a normal exit: HDF5's atexit handler closes the library
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: stderr not redirected, 4: a hostile file loaded";
  std::ifstream in(log);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(text.find("infinite loop closing library"), std::string::npos) << text.substr(0, 4000);
  EXPECT_EQ(text, "") << text.substr(0, 4000);
}
