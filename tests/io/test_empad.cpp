// The EMPAD reader: its small XML parser and the EMPAD fields (errors name the file and the field), the raw name's
// scan shape, recognition by content, and a sample acquisition (.xml + .raw with footer rows) loaded on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/empad/empad_reader.hpp"
#include "io/hdf5/load.hpp"
#include "io/source/readers.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using io::empad::parse_empad_xml;
using io::empad::parse_xml;

namespace {

const char* kV122 =
    "<root name=\"EMPAD_v1.2.2\"><timestamp timestamp=\"1774471672.5\" isoformat=\"2026-03-25T16:47:52.586728\"/>"
    "<software_version>1.2.2  (2021-08-20)</software_version><raw_file filename=\"scan_x32_y64.raw\"/>"
    "<scan_parameters mode=\"search\"><scan_size>0.8</scan_size><scan_resolution_y>64</scan_resolution_y>"
    "<scan_resolution_x>32</scan_resolution_x></scan_parameters><scan_parameters mode=\"acquire\"><scan_size>0.6"
    "</scan_size><scan_resolution_y>16</scan_resolution_y><scan_resolution_x>8</scan_resolution_x>"
    "</scan_parameters><iom_measurements><scan_rotation>0.0</scan_rotation><full_scan_field_of_view><x>1.27e-06</x>"
    "<y>1.27e-06</y></full_scan_field_of_view><nominal_camera_length>0.369</nominal_camera_length>"
    "<high_voltage>300000.0</high_voltage></iom_measurements></root>";

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST(Empad, XmlParserToleratesDeclarationCommentsEntitiesCdata) {
  const auto root = parse_xml("\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- c --><root a='1' b=\"x &amp; &#65;&#x42;\">"
                              "<e/><f>t<!-- c -->u<![CDATA[<v>]]></f></root>\n",
                              "t");
  EXPECT_EQ(root.name, "root");
  EXPECT_EQ(root.attributes.at("a"), "1");
  EXPECT_EQ(root.attributes.at("b"), "x & AB");
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(root.child("f")->text, "tu<v>");
}

TEST(Empad, XmlParserErrorsNameWhereAndWhat) {
  test::expect_error<FormatError>([] { parse_xml("<root><a></b></root>", "'x.xml'"); },
                                  {"'x.xml'", "malformed XML", "</b> closes <a>"});
  test::expect_error<FormatError>([] { parse_xml("<root><a>", "'x.xml'"); }, {"<a> is not closed"});
  test::expect_error<FormatError>([] { parse_xml("<root a=1/>", "'x.xml'"); }, {"not quoted"});
  test::expect_error<FormatError>([] { parse_xml("<root a='1' a='2'/>", "'x.xml'"); }, {"repeated"});
  test::expect_error<FormatError>([] { parse_xml("<root>&bogus;</root>", "'x.xml'"); }, {"unknown entity"});
  test::expect_error<FormatError>([] { parse_xml("<!DOCTYPE r [<!ENTITY a 'b'>]><root/>", "'x.xml'"); },
                                  {"DOCTYPE"});
  test::expect_error<FormatError>([] { parse_xml("<root/><root/>", "'x.xml'"); }, {"after the root element"});
  test::expect_error<FormatError>([] { parse_xml("  ", "'x.xml'"); }, {"no root element"});
  test::expect_error<FormatError>([] { parse_xml("<root><!-- x</root>", "'x.xml'"); }, {"unterminated comment"});
}

TEST(Empad, XmlFieldsScanCandidatesAndCalibration) {
  const io::empad::EmpadXml x = parse_empad_xml(kV122, "'a.xml'");
  EXPECT_EQ(x.raw_file, "scan_x32_y64.raw");
  ASSERT_EQ(x.scans.size(), 2u);  // acquire first, then search
  EXPECT_EQ(x.scans[0].rows, 16u);
  EXPECT_EQ(x.scans[0].cols, 8u);
  EXPECT_NE(x.scans[0].source.find("mode=\"acquire\""), std::string::npos);
  EXPECT_EQ(x.scans[1].rows, 64u);
  EXPECT_EQ(x.scans[1].cols, 32u);
  ASSERT_TRUE(x.calibration.find("energy_kev"));
  EXPECT_DOUBLE_EQ(x.calibration.find("energy_kev")->value, 300.0);
  EXPECT_NE(x.calibration.find("energy_kev")->source.find("high_voltage (300000 V)"), std::string::npos);
  EXPECT_DOUBLE_EQ(x.calibration.find("camera_length_m")->value, 0.369);
  EXPECT_EQ(x.metadata.at("software_version"), "1.2.2  (2021-08-20)");
  EXPECT_EQ(x.metadata.at("timestamp"), "2026-03-25T16:47:52.586728");

  const auto pix = parse_empad_xml("<root><raw_file filename='a.raw'/><pix_x>5</pix_x><pix_y>3</pix_y></root>", "t");
  ASSERT_EQ(pix.scans.size(), 1u);
  EXPECT_EQ(pix.scans[0].rows, 3u);
  EXPECT_EQ(pix.scans[0].cols, 5u);
  const auto stack = parse_empad_xml(
      "<root><raw_file filename='a.raw'/><scan_parameters><series_count>7</series_count></scan_parameters></root>", "t");
  EXPECT_TRUE(stack.scans.empty());
  EXPECT_EQ(stack.series_count.value_or(0), 7u);
}

TEST(Empad, XmlFieldErrors) {
  test::expect_error<FormatError>([] { parse_empad_xml("<other/>", "'a.xml'"); }, {"'a.xml'", "<other>", "<root>"});
  test::expect_error<FormatError>([] { parse_empad_xml("<root><pix_x>1</pix_x></root>", "'a.xml'"); },
                                  {"'a.xml'", "root/raw_file"});
  test::expect_error<FormatError>([] { parse_empad_xml("<root><raw_file name='a'/></root>", "'a.xml'"); },
                                  {"root/raw_file@filename"});
  test::expect_error<FormatError>(
      [] {
        parse_empad_xml("<root><raw_file filename='a.raw'/><scan_parameters mode='acquire'><scan_resolution_x>4x"
                        "</scan_resolution_x><scan_resolution_y>2</scan_resolution_y></scan_parameters></root>",
                        "'a.xml'");
      },
      {"'a.xml'", "scan_parameters[@mode=\"acquire\"]/scan_resolution_x", "'4x'", "not a positive integer"});
  test::expect_error<FormatError>(
      [] {
        parse_empad_xml("<root><raw_file filename='a.raw'/><scan_parameters mode='acquire'><scan_resolution_x>4"
                        "</scan_resolution_x></scan_parameters></root>",
                        "'a.xml'");
      },
      {"scan_resolution_x but not scan_resolution_y"});
  test::expect_error<FormatError>(
      [] { parse_empad_xml("<root><raw_file filename='a.raw'/><pix_x>0</pix_x><pix_y>2</pix_y></root>", "'a.xml'"); },
      {"root/pix_x", "'0'"});
  const auto bad_hv = parse_empad_xml(
      "<root><raw_file filename='a.raw'/><iom_measurements><high_voltage>n/a</high_voltage></iom_measurements></root>",
      "t");
  EXPECT_FALSE(bad_hv.calibration.find("energy_kev"));
  ASSERT_EQ(bad_hv.calibration.warnings.size(), 1u);
}

TEST(Empad, RawNameAndRecognition) {
  const auto s = io::empad::scan_shape_from_raw_name("/data/run/scan_x32_y64.raw");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->first, 64u);  // rows = y
  EXPECT_EQ(s->second, 32u);
  EXPECT_FALSE(io::empad::scan_shape_from_raw_name("/data/scan_x32_y64/other.raw"));
  EXPECT_FALSE(io::empad::scan_shape_from_raw_name("scan_x0_y4.raw"));
  const auto big = io::empad::scan_shape_from_raw_name("scan_x123456789_y7.raw");  // 9 digits: the most read
  ASSERT_TRUE(big);
  EXPECT_EQ(big->first, 7u);
  EXPECT_EQ(big->second, 123456789u);
  for (const char* no : {"scan_x1234567890_y7.raw", "scan_x3_y2.raw.bak", "scan_x_y2.raw", "xscan_x3_y2.raw",
                         "scan_x3_y2.RAW", "scan_x3_y.raw", "scan_x3y2.raw", "scan_x-3_y2.raw", "scan_x3_y2raw", ""})
    EXPECT_FALSE(io::empad::scan_shape_from_raw_name(no)) << no;
  auto rec = [](const std::string& h) {
    return io::empad::is_empad_head(reinterpret_cast<const std::uint8_t*>(h.data()), h.size());
  };
  EXPECT_TRUE(rec(kV122));
  EXPECT_TRUE(rec("<?xml version='1.0'?>\n<!-- x -->\n<root>\n  <raw_file filename='a.raw'/></root>"));
  EXPECT_FALSE(rec("<root><item>1</item></root>"));  // another program's <root>
  EXPECT_FALSE(rec("<rootx><raw_file filename='a.raw'/></rootx>"));
  EXPECT_FALSE(rec("\x93NUMPY"));
}

TEST(Empad, SampleLoadsDroppingTheFooterAndZeroingNaN) {
  sample::SampleSpec s;
  s.scan_rows = 3;
  s.scan_cols = 4;
  s.det_rows = s.det_cols = 128;
  s.seed = 3;
  const std::string xml = test::temp_path("sample.xml");
  const auto files = sample::write_sample_empad(xml, s, 2);
  ASSERT_EQ(files.size(), 2u);
  const std::uint64_t record = 130 * 128 * 4;
  EXPECT_EQ(std::filesystem::file_size(files[1]), 12 * record);
  std::vector<std::uint16_t> counts(12 * 128 * 128);
  sample::simulate_frames(s, 0, 12, counts.data());

  io::LoadOptions o;
  o.backend = "cpu";
  o.representation = "dense";
  const Dataset ds = io::load(xml, o);
  EXPECT_EQ(ds.dtype(), DType::f32);
  EXPECT_EQ(ds.provenance().parameters.at("format"), "empad");
  const auto bytes = ds.read().bytes;
  ASSERT_EQ(bytes.size(), counts.size() * 4);
  for (std::size_t j = 0; j < 2; ++j)  // the sample's NaN (write_sample_empad), zeroed at load
    counts[((j * 7919) % 12) * 128 * 128 + ((j * 37) % 128) * 128 + (j * 53) % 128] = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    float v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    ASSERT_EQ(v, float(counts[i])) << i;
  }
  EXPECT_EQ(ds.provenance().parameters.at("nonfinite_values"), 2);

  const io::FileInfo fi = io::inspect(xml, io::SourceOptions{});
  EXPECT_EQ(fi.reader, "empad");
  EXPECT_EQ(fi.shape.scan_rows, 3u);
  EXPECT_EQ(fi.shape.scan_cols, 4u);
  EXPECT_NE(fi.scan_shape_source.find("acquire"), std::string::npos);
  EXPECT_DOUBLE_EQ(fi.calibration.at("energy_kev").get<double>(), 300.0);
}

TEST(Empad, FileErrorsNameTheFileAndTheByteCounts) {
  const std::string dir = test::temp_path("dir");
  std::filesystem::create_directories(dir);
  const std::string xml = dir + "/a.xml";
  write_text(xml, "<root><raw_file filename=\"a.raw\"/><scan_parameters mode=\"acquire\"><scan_resolution_x>2"
                  "</scan_resolution_x><scan_resolution_y>3</scan_resolution_y></scan_parameters></root>");
  std::filesystem::remove(dir + "/a.raw");
  test::expect_error<IoError>([&] { io::inspect(xml, io::SourceOptions{}); },
                              {xml, "'a.raw'", "root/raw_file@filename", "does not exist"});
  write_text(dir + "/a.raw", std::string(130 * 128 * 4 * 5 + 7, '\0'));
  test::expect_error<FormatError>([&] { io::inspect(xml, io::SourceOptions{}); },
                                  {dir + "/a.raw", "332807 bytes", "66560 bytes", "5 frames and 7 bytes over"});
  write_text(dir + "/a.raw", std::string(130 * 128 * 4 * 5, '\0'));
  test::expect_error<FormatError>([&] { io::inspect(xml, io::SourceOptions{}); },
                                  {"holds 5 frames", "scan_resolution_y x scan_resolution_x = 3 x 2 = 6 frames",
                                   "give the scan shape"});
  write_text(xml, "<root><raw_file filename=\"a.raw\"/><scan_parameters mode=\"acquire\"><scan_resolution_x>2"
                  "</scan_resolution_x></root>");
  test::expect_error<FormatError>([&] { io::inspect(xml, io::SourceOptions{}); },
                                  {xml, "malformed XML", "</root> closes <scan_parameters>"});
}
