// Merlin acquisitions on disk: the frames found, their order and offsets, the scan shape and where it came from,
// and a clear error (file, frame, field) for every broken acquisition: truncated frames, frame sizes that differ,
// duplicate or missing sequence numbers, a .hdr that disagrees, a scan shape that does not fit.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "io/merlin/acquisition.hpp"
#include "merlin_files.hpp"
#include "support/expect_error.hpp"

using namespace qgpu;
using namespace qgpu::io::merlin;
namespace fs = std::filesystem;

namespace {

MibWriteSpec spec12(std::uint32_t side = 16) {
  MibWriteSpec s;
  s.counter_depth = 12;
  s.rows = s.cols = side;
  return s;
}

constexpr std::uint64_t kFrame12 = 384 + 16 * 16 * 2;  // one record of spec12()

void truncate_to(const std::string& path, std::uint64_t bytes) { fs::resize_file(path, bytes); }

// Replaces the .hdr beside an acquisition.
void write_hdr(const std::string& path, const MibWriteSpec& s, std::uint64_t frames, std::uint64_t fpt,
               std::uint64_t scan_x = 0, std::uint64_t scan_y = 0) {
  const std::string t = format_acquisition_header(s, frames, fpt, scan_x, scan_y);
  test::write_bytes(path, std::vector<std::uint8_t>(t.begin(), t.end()));
}

}  // namespace

TEST(MerlinAcquisition, FramesOffsetsAndScanShapeFromFramesPerTrigger) {
  const fs::path dir = test::merlin_dir("a");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4);
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& start : {files[0], files[1]}) {  // by the .mib or by the .hdr
    const MerlinAcquisition a = scan_merlin(start);
    ASSERT_EQ(a.files.size(), 1u);
    EXPECT_EQ(a.files[0], files[0]);
    EXPECT_EQ(a.hdr_file, files[1]);
    EXPECT_EQ(a.frames_found, 12u);
    ASSERT_EQ(a.frames.size(), 12u);
    for (std::size_t k = 0; k < 12; ++k) {
      EXPECT_EQ(a.frames[k].file, 0u);
      EXPECT_EQ(a.frames[k].offset, k * kFrame12 + 384);
    }
    EXPECT_EQ(a.header_bytes, 384u);
    EXPECT_EQ(a.frame_bytes, kFrame12);
    EXPECT_EQ(a.scan_rows, 3u);
    EXPECT_EQ(a.scan_cols, 4u);
    EXPECT_EQ(a.scan_from, ScanShapeFrom::frames_per_trigger);
    EXPECT_TRUE(a.warnings.empty());
    EXPECT_EQ(a.metadata["counter_depth"], 12);
    EXPECT_EQ(a.metadata["first_frame_time"], "2026-01-01T00:00:00.000000000Z");
    EXPECT_EQ(a.metadata["last_frame_time"], "2026-01-01T00:00:00.011000000Z");
    EXPECT_EQ(a.metadata["hdr"]["Frames per Trigger (Number)"], "4");
    EXPECT_EQ(a.metadata["scan_shape"], nlohmann::json({3, 4}));
  }
}

TEST(MerlinAcquisition, InterruptedScanIsCutToWholeRowsWithAWarning) {
  const fs::path dir = test::merlin_dir("b");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4);
  truncate_to(files[0], 10 * kFrame12);  // the scan stopped after 10 of 12 frames
  const MerlinAcquisition a = scan_merlin(files[0]);
  EXPECT_EQ(a.frames_found, 10u);
  EXPECT_EQ(a.scan_rows, 2u);
  EXPECT_EQ(a.scan_cols, 4u);
  EXPECT_EQ(a.frames.size(), 8u);
  ASSERT_EQ(a.warnings.size(), 2u);
  EXPECT_NE(a.warnings[0].find("10 frames are not whole rows of 4"), std::string::npos) << a.warnings[0];
  EXPECT_NE(a.warnings[0].find("cut to 2 rows, 2 frames dropped"), std::string::npos) << a.warnings[0];
  EXPECT_NE(a.warnings[1].find("the .hdr says 12 frames in acquisition, the files hold 10"), std::string::npos);
  // The .hdr's ScanX x ScanY the same way; a given scan shape too.
  write_hdr(files[1], spec12(), 12, 1, 4, 3);
  const MerlinAcquisition b = scan_merlin(files[0]);
  EXPECT_EQ(b.scan_from, ScanShapeFrom::hdr_scan_xy);
  EXPECT_EQ(b.scan_rows, 2u);
  EXPECT_EQ(b.frames.size(), 8u);
  EXPECT_NE(b.warnings[0].find("cut to 2 whole rows of 4, 2 frames dropped"), std::string::npos) << b.warnings[0];
  const MerlinAcquisition c = scan_merlin(files[0], 5, 2);
  EXPECT_EQ(c.scan_from, ScanShapeFrom::given);
  EXPECT_EQ(c.scan_rows, 5u);
  EXPECT_EQ(c.frames.size(), 10u);
  test::expect_error<InvalidArgument>([&] { scan_merlin(files[0], 3, 3); },
                                      {"given scan shape 3x3 = 9 frames", "hold 10", "more frames than the scan"});
  test::expect_error<InvalidArgument>([&] { scan_merlin(files[0], 1, 20); }, {"rows of 20 frames", "only 10"});
}

TEST(MerlinAcquisition, NoScanShapeStillCountsTheFrames) {
  const fs::path dir = test::merlin_dir("c");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4);
  write_hdr(files[1], spec12(), 12, 1);  // Frames per Trigger 1, no ScanX/ScanY
  const MerlinAcquisition a = scan_merlin(files[0]);
  EXPECT_FALSE(a.has_scan_shape());
  EXPECT_EQ(a.frames.size(), 12u);
  EXPECT_EQ(a.frames_found, 12u);
  test::expect_error<InvalidArgument>([&] { a.require_scan_shape(); },
                                      {"holds 12 frames and no scan shape", "Frames per Trigger is 1",
                                       "give the scan shape"});
  fs::remove(files[1]);
  const MerlinAcquisition b = scan_merlin(files[0]);
  EXPECT_TRUE(b.hdr_file.empty());
  test::expect_error<InvalidArgument>([&] { b.require_scan_shape(); }, {"no .hdr beside it"});
  EXPECT_EQ(scan_merlin(files[0], 0, 6).scan_rows, 2u);  // the row length alone
}

TEST(MerlinAcquisition, TruncatedFrameIsAnError) {
  const fs::path dir = test::merlin_dir("d");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4);
  truncate_to(files[0], 10 * kFrame12 + 100);
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); },
                                  {files[0], "10 whole frames of 896 bytes", "100 bytes of a truncated frame 10"});
  truncate_to(files[0], 200);  // less than one header
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); }, {files[0], "frame 0", "truncated"});
}

TEST(MerlinAcquisition, WrongHeaderSizeIsAnError) {
  const fs::path dir = test::merlin_dir("e");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4);
  test::patch(files[0], 11, "00384", "00768");  // frame 0 claims a quad-sized header
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); }, {files[0], "truncated frame"});
  test::patch(files[0], 11, "00768", "00384");
  test::patch(files[0], 5 * kFrame12 + 11, "00384", "00400");  // one frame in the middle
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); },
                                  {files[0] + "' frame 5", "field 2 (header size) 00400 vs 00384", "one size"});
}

TEST(MerlinAcquisition, MultiFileOrderGapsAndDuplicates) {
  const fs::path dir = test::merlin_dir("f");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4, 4);  // 4 files of 3 frames + scan.hdr
  ASSERT_EQ(files.size(), 5u);
  const MerlinAcquisition a = scan_merlin(files[2]);
  EXPECT_EQ(a.files, std::vector<std::string>(files.begin(), files.begin() + 4));
  EXPECT_EQ(a.hdr_file, (dir / "scan.hdr").string());
  ASSERT_EQ(a.frames.size(), 12u);
  for (std::size_t k = 0; k < 12; ++k) {
    EXPECT_EQ(a.frames[k].file, k / 3);
    EXPECT_EQ(a.frames[k].offset, (k % 3) * kFrame12 + 384);
  }
  const MerlinAcquisition alone = scan_merlin(files[2], MerlinOptions{0, 3, true, true});  // one file alone
  EXPECT_EQ(alone.frames_found, 3u);
  EXPECT_EQ(alone.first_sequence, 7u);
  ASSERT_EQ(alone.warnings.size(), 2u);  // starts at 7; the .hdr counts 12 frames
  EXPECT_NE(alone.warnings[0].find("opened alone starts at sequence number 7"), std::string::npos);
  const std::vector<std::uint8_t> third = test::read_bytes(files[2]);
  verify_frame_header(alone, 1, third.data() + kFrame12);
  // A renamed copy of file 1 sorts by sequence number, not by name.
  const std::string copy = (dir / "scan_000009.mib").string();
  fs::copy_file(files[0], copy);
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); },
                                  {"sequence number 1 appears twice", "scan_000001.mib' frame 0",
                                   "scan_000009.mib' frame 0"});
  fs::remove(files[0]);
  const MerlinAcquisition b = scan_merlin(files[2]);
  EXPECT_EQ(b.files.front(), copy);  // first in acquisition order
  EXPECT_EQ(b.frames.size(), 12u);
  fs::remove(files[1]);
  test::expect_error<FormatError>([&] { scan_merlin(files[2]); },
                                  {"sequence numbers 4..6 are missing", "scan_000009.mib' frame 2",
                                   "scan_000003.mib' frame 0"});
  fs::remove(copy);
  test::expect_error<FormatError>([&] { scan_merlin(files[2]); },
                                  {"sequence numbers 1..6 are missing before", "scan_000003.mib' frame 0"});
}

TEST(MerlinAcquisition, SequenceGapInsideAFileAndTheLoaderCheck) {
  const fs::path dir = test::merlin_dir("g");
  const auto files = test::write_merlin(dir, "scan", spec12(), 3, 4);
  test::patch(files[0], 5 * kFrame12 + 4, "000006", "000007");
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); },
                                  {"sequence numbers 6 are missing", "frame 4", "frame 5"});
  // Reading only the first and last header of each file misses it; the loader's per-frame check finds it.
  MerlinOptions o;
  o.every_header = false;
  const MerlinAcquisition a = scan_merlin(files[0], o);
  EXPECT_EQ(a.frames.size(), 12u);
  std::vector<std::uint8_t> bytes = test::read_bytes(files[0]);
  for (std::size_t k = 0; k < 5; ++k) verify_frame_header(a, k, bytes.data() + k * kFrame12);
  test::expect_error<FormatError>([&] { verify_frame_header(a, 5, bytes.data() + 5 * kFrame12); },
                                  {files[0] + "' frame 5", "sequence number 7, expected 6"});
  bytes[5 * kFrame12 + 26] = '9';  // width 0016 -> 0916: another frame size
  test::expect_error<FormatError>([&] { verify_frame_header(a, 5, bytes.data() + 5 * kFrame12); },
                                  {"frame 5", "fields 2-7", "differ from the first frame's"});
}

TEST(MerlinAcquisition, FilesOfDifferentFormatsOrAHdrThatDisagrees) {
  const fs::path dir = test::merlin_dir("h");
  const auto files = test::write_merlin(dir, "scan", spec12(), 2, 3, 2);
  MibWriteSpec s6 = spec12();
  s6.counter_depth = 6;
  const fs::path other = test::merlin_dir("h_other");
  const auto six = test::write_merlin(other, "scan", s6, 2, 3, 2);
  fs::copy_file(six[1], files[1], fs::copy_options::overwrite_existing);
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); },
                                  {"scan_000002.mib' frame 0", "field 6 (pixel type) U08 vs U16", "one size"});
  const auto ok = test::write_merlin(dir, "scan", spec12(), 2, 3, 2);
  MibWriteSpec s24 = spec12();
  s24.counter_depth = 24;
  write_hdr(ok[2], s24, 6, 3);  // .hdr Counter Depth 24, frames 12-bit
  test::expect_error<FormatError>([&] { scan_merlin(files[0]); },
                                  {"frame 0", "counter depth 12 (MQ1A) disagrees", "Counter Depth 24"});
}

TEST(MerlinAcquisition, NotAMerlinFile) {
  const fs::path dir = test::merlin_dir("i");
  const std::string p = (dir / "x.mib").string();
  test::write_bytes(p, {'H', 'E', 'L', 'L', 'O', '!'});
  test::expect_error<FormatError>([&] { scan_merlin(p); }, {p, "not a Merlin file", "MQ1,"});
  test::expect_error<IoError>([&] { scan_merlin((dir / "missing.mib").string()); }, {"missing.mib"});
  test::expect_error<IoError>([&] { scan_merlin(dir.string()); }, {"not a regular file"});
  const std::string h = (dir / "lonely.hdr").string();
  test::write_bytes(h, {'H', 'D', 'R', ',', '\t', '\r', '\n'});
  test::expect_error<IoError>([&] { scan_merlin(h); }, {"no .mib file beside", "lonely.mib"});
}

TEST(MerlinAcquisition, OneFramePerFileUnderALowDescriptorLimit) {
  // Some users save one frame per file: 200 files opened under a limit of 48 descriptors (the scan keeps none open).
  const fs::path dir = test::merlin_dir("j");
  const auto files = test::write_merlin(dir, "scan", spec12(8), 10, 20, 200);
  ASSERT_EQ(files.size(), 201u);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = 48;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  MerlinAcquisition a;
  std::string error;
  try {
    a = scan_merlin(files[57]);
  } catch (const std::exception& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_NOFILE, &old);
  ASSERT_EQ(error, "");
  EXPECT_EQ(a.files.size(), 200u);
  EXPECT_EQ(a.scan_rows, 10u);
  EXPECT_EQ(a.scan_cols, 20u);
  for (std::size_t k = 0; k < 200; ++k) {
    EXPECT_EQ(a.frames[k].file, k);
    EXPECT_EQ(a.frames[k].offset, 384u);
  }
}
