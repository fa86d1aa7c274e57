// Seeds of fuzz_empad_xml: EMPAD xmls as the instruments write them (v1.2.2 with search and acquire scans and
// iom_measurements; older ones with pix_x / pix_y; a series_count stack) and the parser's markup (declaration,
// comments, CDATA, entities).
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  const char* seeds[] = {
      "<root name=\"EMPAD_v1.2.2\"><timestamp timestamp=\"1774471672.5\" isoformat=\"2026-03-25T16:47:52.5\"/>"
      "<software_version>1.2.2  (2021-08-20)</software_version><raw_file filename=\"scan_x32_y64.raw\"/>"
      "<scan_parameters mode=\"search\"><scan_size>0.8</scan_size><scan_resolution_y>64</scan_resolution_y>"
      "<scan_resolution_x>32</scan_resolution_x></scan_parameters><scan_parameters mode=\"acquire\"><scan_size>0.6"
      "</scan_size><scan_resolution_y>64</scan_resolution_y><scan_resolution_x>32</scan_resolution_x>"
      "</scan_parameters><iom_measurements><full_scan_field_of_view><x>1.27e-06</x><y>1.27e-06</y>"
      "</full_scan_field_of_view><nominal_camera_length>0.369</nominal_camera_length><high_voltage>300000.0"
      "</high_voltage></iom_measurements></root>",
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!-- EMPAD -->\n<root>\n  <raw_file filename='a.raw'/>\n"
      "  <pix_x>128</pix_x>\n  <pix_y>128</pix_y>\n</root>\n",
      "<root><raw_file filename=\"stack.raw\"/><scan_parameters><series_count>100</series_count></scan_parameters>"
      "</root>",
      "\xEF\xBB\xBF<root a=\"&amp;&lt;&#65;&#x42;\"><raw_file filename=\"b&quot;.raw\"/><x><![CDATA[<y>]]></x>"
      "<?pi x?></root>",
  };
  int n = 0;
  for (const char* s : seeds) std::ofstream(dir + "/seed_" + std::to_string(n++) + ".xml", std::ios::binary) << s;
  std::printf("%d seeds\n", n);
  return 0;
}
