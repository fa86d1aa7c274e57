// Bad movie requests are rejected before any work: a typed error naming the problem, no file written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "movie_fixtures.hpp"
#include "synthetic_dataset.hpp"

namespace qgpu::movie {
namespace {

namespace fs = std::filesystem;

MovieSpec adf() {
  MovieSpec s;
  s.sequence = Sequence::adf_sweep;
  s.start = 3;
  s.stop = 9;
  s.frames = 4;
  return s;
}

std::string out(const std::string& ext) {
  const std::string p = test::temp_path("movie." + ext);
  fs::remove(p);
  return p;
}

template <class E> void expect_rejected(const MovieSpec& s, const std::string& path, const std::string& words) {
  try {
    validate(s, path);
    ADD_FAILURE() << "accepted: " << words;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
  // render() on a dataset refuses the same request and leaves no file.
  const bool existed = fs::exists(path);
  EXPECT_THROW(render(test::movie_sample(), path, s), E);
  EXPECT_EQ(fs::exists(path), existed) << path;
}

TEST(MovieValidation, StartAboveStop) {
  MovieSpec s = adf();
  s.start = 10;
  expect_rejected<InvalidArgument>(s, out("mp4"), "start 10 is greater than stop 9");
  s.sequence = Sequence::ssb_defocus;
  expect_rejected<InvalidArgument>(s, out("gif"), "greater than stop");
}

TEST(MovieValidation, ZeroOrTooManyFrames) {
  MovieSpec s = adf();
  s.frames = 0;
  expect_rejected<InvalidArgument>(s, out("mp4"), "frames must be 1..100000 (got 0)");
  s.frames = 100001;
  expect_rejected<InvalidArgument>(s, out("mp4"), "(got 100001)");
}

TEST(MovieValidation, UnknownExtension) {
  expect_rejected<InvalidArgument>(adf(), out("avi"), "unknown extension (expected .mp4 or .gif)");
  expect_rejected<InvalidArgument>(adf(), test::temp_path("movie_without_extension"), "unknown extension");
}

TEST(MovieValidation, UnwritableOutput) {
  expect_rejected<IoError>(adf(), (test::temp_dir() / "no_such_folder" / "m.mp4").string(), "does not exist");
  const fs::path dir = test::temp_dir() / "movie_dir.mp4";
  fs::create_directories(dir);
  expect_rejected<IoError>(adf(), dir.string(), "is a directory");
  fs::create_directories(test::temp_dir() / "dev_link");
  const std::string link = (test::temp_dir() / "dev_link" / "null.gif").string();
  fs::remove(link);
  fs::create_symlink("/dev/null", link);
  expect_rejected<IoError>(adf(), link, "is a symbolic link to a character device ('/dev/null'), not a regular file");
}

TEST(MovieValidation, BadOptions) {
  MovieSpec s = adf();
  s.adf_width = 4;
  s.adf_outer = 20;
  expect_rejected<InvalidArgument>(s, out("mp4"), "not both");
  s = adf();
  s.adf_outer = 5;
  expect_rejected<InvalidArgument>(s, out("mp4"), "below the last inner radius 9");
  s = adf();
  s.fps = 0;
  expect_rejected<InvalidArgument>(s, out("mp4"), "fps must be 1..60");
  s = adf();
  s.look.colormap = "jet";
  expect_rejected<InvalidArgument>(s, out("mp4"), "jet");
  s = adf();
  s.width = 10;
  expect_rejected<InvalidArgument>(s, out("mp4"), "both width and height");
  s = adf();
  s.encoder = "gif";
  expect_rejected<InvalidArgument>(s, out("mp4"), "does not write mp4");
  s = adf();
  s.start = -1;
  expect_rejected<InvalidArgument>(s, out("gif"), "radii must be >= 0");
}

TEST(MovieValidation, DatasetDependentChecksBeforeAnyFrame) {
  MovieSpec s;
  s.sequence = Sequence::path_row;
  s.row = 12;  // the sample has 12 rows
  const std::string p = out("mp4");
  EXPECT_THROW(render(test::movie_sample(), p, s), RegionError);
  EXPECT_FALSE(fs::exists(p));
  s.sequence = Sequence::path_line;
  s.line[0] = 0, s.line[1] = 0, s.line[2] = 2, s.line[3] = 14;  // 14 columns
  EXPECT_THROW(render(test::movie_sample(), p, s), RegionError);
  EXPECT_FALSE(fs::exists(p));
  // SSB needs the calibration; a dataset without one is refused by name.
  s.sequence = Sequence::ssb_defocus;
  s.start = 0;
  s.stop = 10;
  const Dataset bare = test::bare_dataset();
  try {
    render(bare, p, s);
    ADD_FAILURE() << "SSB movie without calibration accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("calibration"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
}  // namespace qgpu::movie
