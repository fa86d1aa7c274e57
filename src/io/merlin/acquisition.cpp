#include "io/merlin/acquisition.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <string_view>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"

namespace qgpu::io::merlin {

namespace {

namespace fs = std::filesystem;

struct File {
  int fd = -1;
  std::uint64_t size = 0;
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File(File&& o) noexcept : fd(o.fd), size(o.size) { o.fd = -1; }
  File& operator=(File&& o) noexcept {
    std::swap(fd, o.fd);
    size = o.size;
    return *this;
  }
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

File open_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw IoError("'" + path + "' is not a regular file");
  File f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) throw IoError("cannot open '" + path + "': " + std::strerror(errno));
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) throw IoError("'" + path + "' is not a regular file");
  f.size = std::uint64_t(st.st_size);
  return f;
}

// Reads exactly n bytes at off (the caller made sure they lie inside the file).
void read_at(const File& f, std::uint8_t* buf, std::size_t n, std::uint64_t off, const std::string& path) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(f.fd, buf + got, n - got, off_t(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw IoError("cannot read " + std::to_string(n) + " bytes at byte " + std::to_string(off) + " of '" + path +
                    "': " + (r < 0 ? std::strerror(errno) : "the file ended (truncated while reading?)"));
    got += std::size_t(r);
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string strip_trailing_digits(std::string s) {
  while (!s.empty() && s.back() >= '0' && s.back() <= '9') s.pop_back();
  return s;
}

std::string join(const fs::path& dir, const std::string& name) {
  return dir.empty() ? name : (dir / name).string();
}

// .mib files of `dir` named <exact>.mib, or <prefix>[sep]<digits>.mib (sep '_' or '-' when allowed).
std::vector<std::string> mib_siblings(const fs::path& dir, const std::string& prefix, bool allow_sep,
                                      const std::string& exact) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 5 || lower(name.substr(name.size() - 4)) != ".mib") continue;
    const std::string base = name.substr(0, name.size() - 4);
    bool take = !exact.empty() && base == exact;
    if (!take && base.size() > prefix.size() && base.compare(0, prefix.size(), prefix) == 0) {
      std::string_view rest = std::string_view(base).substr(prefix.size());
      if (allow_sep && (rest.front() == '_' || rest.front() == '-')) rest.remove_prefix(1);
      take = all_digits(rest);
    }
    std::error_code fe;
    if (take && fs::is_regular_file(it->path(), fe)) names.push_back(name);
  }
  if (ec) throw IoError("cannot list the folder '" + (dir.empty() ? std::string(".") : dir.string()) + "': " + ec.message());
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(join(dir, n));
  return out;
}

std::string first_existing(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c;
  }
  return {};
}

// Fields 1-7 of a frame header, read without a full parse: sequence number and the bytes of fields 2-7 (header
// size, chips, width, height, pixel type, layout), which every frame of an acquisition shares.
struct QuickHeader {
  std::uint64_t sequence = 0;
  std::string_view shape;  // fields 2-7 as text
};

bool quick_header(const std::uint8_t* h, std::size_t n, QuickHeader* q) {
  if (!looks_like_mib(h, n)) return false;
  const std::string_view t(reinterpret_cast<const char*>(h), std::min<std::size_t>(n, 96));
  std::size_t commas[9];
  std::size_t pos = 0;
  for (int i = 0; i < 9; ++i) {
    pos = t.find(',', i == 0 ? 0 : pos + 1);
    if (pos == std::string_view::npos) return false;
    commas[i] = pos;
  }
  const std::string_view seq = t.substr(commas[0] + 1, commas[1] - commas[0] - 1);
  if (!all_digits(seq) || seq.size() > 18) return false;
  q->sequence = 0;
  for (char c : seq) q->sequence = q->sequence * 10 + std::uint64_t(c - '0');
  q->shape = t.substr(commas[1] + 1, commas[8] - commas[1] - 1);
  return true;
}

std::string field_diff(const FrameHeader& a, const FrameHeader& b) {
  auto d = [](const char* name, auto x, auto y) {
    return std::string(name) + " " + std::to_string(x) + " vs " + std::to_string(y);
  };
  if (a.header_bytes != b.header_bytes) return d("field 2 (header size)", a.header_bytes, b.header_bytes);
  if (a.chips != b.chips) return d("field 3 (chips)", a.chips, b.chips);
  if (a.width != b.width) return d("field 4 (width)", a.width, b.width);
  if (a.height != b.height) return d("field 5 (height)", a.height, b.height);
  if (a.pixel_type != b.pixel_type)
    return std::string("field 6 (pixel type) ") + pixel_type_name(a.pixel_type) + " vs " + pixel_type_name(b.pixel_type);
  if (a.layout != b.layout) return std::string("field 7 (layout) ") + layout_name(a.layout) + " vs " + layout_name(b.layout);
  if (a.counter_depth != b.counter_depth) return d("MQ1A counter depth", a.counter_depth, b.counter_depth);
  return {};
}

struct Scanned {  // files are opened when read, so an acquisition of many files holds few descriptors
  std::string path;
  std::uint64_t size = 0;
  std::uint64_t frames = 0;
  FrameHeader first, last;
  std::vector<std::uint64_t> seq;  // per frame
};

std::string where_frame(const std::string& path, std::uint64_t k) { return "'" + path + "' frame " + std::to_string(k); }

}  // namespace

const char* scan_shape_from_name(ScanShapeFrom s) {
  switch (s) {
    case ScanShapeFrom::given: return "given";
    case ScanShapeFrom::given_row_length: return "given row length";
    case ScanShapeFrom::hdr_scan_xy: return ".hdr ScanY x ScanX";
    case ScanShapeFrom::frames_per_trigger: return ".hdr Frames per Trigger (one trigger per scan row)";
    case ScanShapeFrom::single_frame: return "single frame";
    case ScanShapeFrom::undetermined: return "undetermined";
  }
  return "?";
}

void MerlinAcquisition::require_scan_shape() const {
  if (has_scan_shape()) return;
  throw InvalidArgument("Merlin acquisition '" + (files.empty() ? std::string() : files.front()) + "' holds " +
                        std::to_string(frames_found) + " frames and no scan shape: " +
                        (hdr_file.empty() ? std::string("no .hdr beside it")
                                          : "its .hdr '" + hdr_file + "' has no ScanX/ScanY and Frames per Trigger is 1") +
                        "; give the scan shape (ROWS COLS, or the row length)");
}

MerlinAcquisition scan_merlin(const std::string& path, std::size_t scan_rows, std::size_t scan_cols) {
  MerlinOptions o;
  o.scan_rows = scan_rows;
  o.scan_cols = scan_cols;
  return scan_merlin(path, o);
}

MerlinAcquisition scan_merlin(const std::string& path, const MerlinOptions& options) {
  if (options.scan_rows && !options.scan_cols)
    throw InvalidArgument("Merlin: a scan shape of " + std::to_string(options.scan_rows) +
                          " rows needs its columns (give ROWS COLS, or 0 COLS for rows of COLS frames)");
  // 1. What was named: a .mib or a .hdr, by content.
  std::uint8_t magic[4] = {};
  {
    const File f = open_regular(path);
    if (f.size < 4) throw FormatError("'" + path + "' is not a Merlin file: " + std::to_string(f.size) + " bytes");
    read_at(f, magic, 4, 0, path);
  }
  const fs::path p(path), dir = p.parent_path();
  const std::string stem = p.stem().string();
  std::vector<std::string> mib_paths, hdr_candidates;
  if (looks_like_hdr(magic, 4)) {
    hdr_candidates = {path};
    mib_paths = options.single_file ? std::vector<std::string>{} : mib_siblings(dir, stem, true, stem);
    if (options.single_file) {
      const std::string one = first_existing({join(dir, stem + ".mib"), join(dir, stem + ".MIB")});
      if (!one.empty()) mib_paths.push_back(one);
    }
    if (mib_paths.empty())
      throw IoError("no .mib file beside the Merlin header '" + path + "' (looked for " + stem + ".mib and " + stem +
                    "[_-]<digits>.mib)");
  } else if (looks_like_mib(magic, 4)) {
    const std::string prefix = strip_trailing_digits(stem);
    mib_paths = (options.single_file || prefix == stem) ? std::vector<std::string>{path}
                                                        : mib_siblings(dir, prefix, false, "");
    if (std::find(mib_paths.begin(), mib_paths.end(), path) == mib_paths.end() &&
        std::find(mib_paths.begin(), mib_paths.end(), join(dir, p.filename().string())) == mib_paths.end())
      mib_paths = {path};  // named other than <prefix><digits>.mib (e.g. no .mib extension): that file alone
    std::string bare = prefix;
    while (!bare.empty() && (bare.back() == '_' || bare.back() == '-')) bare.pop_back();
    for (const std::string& s : {stem, prefix, bare})
      if (!s.empty()) {
        hdr_candidates.push_back(join(dir, s + ".hdr"));
        hdr_candidates.push_back(join(dir, s + ".HDR"));
      }
  } else {
    throw FormatError("'" + path + "' is not a Merlin file: it starts with neither 'MQ1,' (.mib) nor 'HDR,' (.hdr)");
  }

  MerlinAcquisition acq;
  // 2. The .hdr.
  AcquisitionHeader hdr;
  acq.hdr_file = first_existing(hdr_candidates);
  if (!acq.hdr_file.empty()) {
    const File f = open_regular(acq.hdr_file);
    if (f.size > kMaxHdrBytes)
      throw FormatError("Merlin acquisition header '" + acq.hdr_file + "': " + std::to_string(f.size) +
                        " bytes, more than a .hdr holds (" + std::to_string(kMaxHdrBytes) + ")");
    std::vector<std::uint8_t> bytes(f.size);
    read_at(f, bytes.data(), bytes.size(), 0, acq.hdr_file);
    hdr = parse_acquisition_header(bytes.data(), bytes.size(), acq.hdr_file);
  }

  // 3. Every file: its first header, size in whole frames, all frames' sequence numbers.
  std::vector<Scanned> files;
  FrameHeader ref;
  std::string ref_where;
  for (const std::string& fp : mib_paths) {
    Scanned s;
    s.path = fp;
    const File file = open_regular(fp);
    s.size = file.size;
    if (s.size == 0) throw FormatError("Merlin file '" + fp + "' is empty");
    std::vector<std::uint8_t> head(std::min<std::uint64_t>(s.size, kMaxFrameHeaderBytes));
    read_at(file, head.data(), head.size(), 0, fp);
    s.first = parse_frame_header(head.data(), head.size(), Where{fp, 0, 0});
    if (files.empty()) {
      ref = s.first;
      ref_where = where_frame(fp, 0);
      acq.format = pixel_format(ref, hdr.counter_depth, Where{fp, 0, 0});
      acq.header_bytes = ref.header_bytes;
      acq.frame_bytes = checked_add(ref.header_bytes, acq.format.payload_bytes, "Merlin frame bytes");
    } else if (const std::string d = field_diff(s.first, ref); !d.empty()) {
      throw FormatError("Merlin acquisition: " + where_frame(fp, 0) + " and " + ref_where + " differ in " + d +
                        ": the frames of one acquisition all have one size and format");
    }
    s.frames = s.size / acq.frame_bytes;
    if (s.size % acq.frame_bytes)
      throw FormatError("Merlin file '" + fp + "' is " + std::to_string(s.size) + " bytes: " +
                        std::to_string(s.frames) + " whole frames of " + std::to_string(acq.frame_bytes) +
                        " bytes (header " + std::to_string(acq.header_bytes) + " + " +
                        std::to_string(acq.format.payload_bytes) + " pixel bytes) and " +
                        std::to_string(s.size % acq.frame_bytes) + " bytes of a truncated frame " +
                        std::to_string(s.frames) + " (or its header size or pixel type disagrees with the file)");
    files.push_back(std::move(s));
  }

  // Sequence numbers: every header (quick parse, in parallel), or the first and last of each file.
  std::vector<std::uint64_t> base(files.size() + 1, 0);
  for (std::size_t i = 0; i < files.size(); ++i) base[i + 1] = base[i] + files[i].frames;
  const std::uint64_t total = base.back();
  std::vector<std::uint64_t> seq(total);
  std::string ref_shape;
  {
    std::vector<std::uint8_t> h0(acq.header_bytes);
    read_at(open_regular(files[0].path), h0.data(), h0.size(), 0, files[0].path);
    QuickHeader q;
    quick_header(h0.data(), h0.size(), &q);
    ref_shape = std::string(q.shape);
    acq.header_shape = ref_shape;
  }
  const std::string ref_size_field = ref_shape.substr(0, ref_shape.find(','));
  auto full_check = [&](std::size_t fi, std::uint64_t k, const std::uint8_t* h) {
    const Where w{files[fi].path, k, k * acq.frame_bytes};
    QuickHeader q;
    if (quick_header(h, acq.header_bytes, &q) && q.shape.substr(0, q.shape.find(',')) != ref_size_field)
      throw FormatError("Merlin acquisition: " + w.text() + " and " + ref_where + " differ in field 2 (header size) " +
                        std::string(q.shape.substr(0, q.shape.find(','))) + " vs " + std::string(ref_size_field) +
                        ": the frames of one acquisition all have one size and format");
    const FrameHeader fh = parse_frame_header(h, acq.header_bytes, w);
    if (const std::string d = field_diff(fh, ref); !d.empty())
      throw FormatError("Merlin acquisition: " + w.text() + " and " + ref_where + " differ in " + d +
                        ": the frames of one acquisition all have one size and format");
    return fh;
  };
  for (std::size_t fi = 0; fi < files.size(); ++fi) {  // first and last header of each file, fully parsed
    Scanned& s = files[fi];
    const File file = open_regular(s.path);
    if (file.size != s.size) throw IoError("'" + s.path + "' changed size while it was read");
    std::vector<std::uint8_t> h(acq.header_bytes);
    read_at(file, h.data(), h.size(), 0, s.path);
    s.first = full_check(fi, 0, h.data());
    read_at(file, h.data(), h.size(), (s.frames - 1) * acq.frame_bytes, s.path);
    s.last = full_check(fi, s.frames - 1, h.data());
  }
  if (options.every_header) {
    // Work items of up to 4096 frames of one file, each opening its file once, spread over the cores.
    struct Item {
      std::size_t file;
      std::uint64_t k0, k1;
    };
    std::vector<Item> items;
    for (std::size_t fi = 0; fi < files.size(); ++fi)
      for (std::uint64_t k0 = 0; k0 < files[fi].frames; k0 += 4096)
        items.push_back({fi, k0, std::min<std::uint64_t>(files[fi].frames, k0 + 4096)});
    std::mutex m;
    std::uint64_t bad = total;
    std::exception_ptr err;
    parallel_for(items.size(), [&](std::size_t it) {
      const Item& item = items[it];
      std::uint64_t g = base[item.file] + item.k0;
      try {
        const File file = open_regular(files[item.file].path);
        std::vector<std::uint8_t> h(acq.header_bytes);
        for (std::uint64_t k = item.k0; k < item.k1; ++k, ++g) {
          read_at(file, h.data(), h.size(), k * acq.frame_bytes, files[item.file].path);
          QuickHeader q;
          if (quick_header(h.data(), h.size(), &q) && q.shape == ref_shape)
            seq[g] = q.sequence;
          else
            seq[g] = full_check(item.file, k, h.data()).sequence;  // names the field that differs, or passes
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (g < bad) bad = g, err = std::current_exception();
      }
    });
    if (err) std::rethrow_exception(err);
  } else {
    for (std::size_t fi = 0; fi < files.size(); ++fi) {
      const Scanned& s = files[fi];
      if (s.last.sequence < s.first.sequence || s.last.sequence - s.first.sequence != s.frames - 1)
        throw FormatError("Merlin file '" + s.path + "': its " + std::to_string(s.frames) +
                          " frames run from sequence number " + std::to_string(s.first.sequence) + " to " +
                          std::to_string(s.last.sequence) + ": not consecutive");
      for (std::uint64_t k = 0; k < s.frames; ++k) seq[base[fi] + k] = s.first.sequence + k;
    }
  }

  // 4. Acquisition order: by sequence number, which must run 1, 2, ... without duplicates or gaps.
  std::vector<std::uint64_t> order(total);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) { return seq[a] < seq[b]; });
  auto name_of = [&](std::uint64_t g) {
    const std::size_t fi = std::upper_bound(base.begin(), base.end(), g) - base.begin() - 1;
    return where_frame(files[fi].path, g - base[fi]);
  };
  // One file opened alone may start anywhere (one file of a multi-file acquisition); an acquisition starts at 1.
  const std::uint64_t first_seq = options.single_file ? seq[order[0]] : 1;
  acq.first_sequence = first_seq;
  for (std::uint64_t i = 0; i < total; ++i) {
    const std::uint64_t s = seq[order[i]];
    if (s == first_seq + i) continue;
    if (i > 0 && s == seq[order[i - 1]])
      throw FormatError("Merlin acquisition: sequence number " + std::to_string(s) + " appears twice: " +
                        name_of(order[i - 1]) + " and " + name_of(order[i]) +
                        " (files of two acquisitions together? open one file alone)");
    throw FormatError("Merlin acquisition: sequence numbers " + std::to_string(first_seq + i) +
                      (s - 1 > first_seq + i ? ".." + std::to_string(s - 1) : std::string()) + " are missing" +
                      (i > 0 ? " between " + name_of(order[i - 1]) + " and " + name_of(order[i])
                             : " before " + name_of(order[i]) + " (the first frame found)") +
                      ": a file of the acquisition is missing, or frames were lost");
  }
  // Files in acquisition order (by the sequence number of their first frame).
  std::vector<std::size_t> file_order(files.size());
  std::iota(file_order.begin(), file_order.end(), 0);
  std::sort(file_order.begin(), file_order.end(),
            [&](std::size_t a, std::size_t b) { return files[a].first.sequence < files[b].first.sequence; });
  std::vector<std::uint32_t> file_rank(files.size());
  for (std::size_t r = 0; r < file_order.size(); ++r) {
    file_rank[file_order[r]] = std::uint32_t(r);
    acq.files.push_back(files[file_order[r]].path);
    acq.file_frames.push_back(files[file_order[r]].frames);
  }
  acq.frames_found = total;
  if (first_seq != 1)
    acq.warnings.push_back("'" + acq.files[0] + "' opened alone starts at sequence number " +
                           std::to_string(first_seq) + ": frames 1.." + std::to_string(first_seq - 1) +
                           " of its acquisition are in other files");

  // 5. Scan shape.
  const std::uint64_t n = total;
  auto fit = [&](std::uint64_t rows, std::uint64_t cols, ScanShapeFrom from, const std::string& what) {
    const std::uint64_t want = checked_mul<InvalidArgument>(rows, cols, "Merlin scan shape");
    if (want < n)
      throw InvalidArgument("Merlin acquisition: " + what + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                            " = " + std::to_string(want) + " frames, but the files hold " + std::to_string(n) +
                            ": more frames than the scan");
    if (want > n) {
      const std::uint64_t kept = n / cols;
      if (kept == 0)
        throw InvalidArgument("Merlin acquisition: " + what + " " + std::to_string(rows) + "x" +
                              std::to_string(cols) + " needs rows of " + std::to_string(cols) +
                              " frames, but the files hold only " + std::to_string(n));
      acq.warnings.push_back(what + " " + std::to_string(rows) + "x" + std::to_string(cols) + " = " +
                             std::to_string(want) + " frames, but the files hold " + std::to_string(n) +
                             " (interrupted scan?): cut to " + std::to_string(kept) + " whole rows of " +
                             std::to_string(cols) + ", " + std::to_string(n - kept * cols) + " frames dropped");
      rows = kept;
    }
    acq.scan_rows = rows;
    acq.scan_cols = cols;
    acq.scan_from = from;
  };
  auto rows_of = [&](std::uint64_t cols, ScanShapeFrom from, const std::string& what) {
    const std::uint64_t rows = n / cols;
    if (rows == 0)
      throw InvalidArgument("Merlin acquisition: " + what + " " + std::to_string(cols) + " frames per row, but the "
                            "files hold only " + std::to_string(n) + " frames");
    if (n % cols)
      acq.warnings.push_back(std::to_string(n) + " frames are not whole rows of " + std::to_string(cols) + " (" +
                             what + "; interrupted scan?): cut to " + std::to_string(rows) + " rows, " +
                             std::to_string(n % cols) + " frames dropped");
    acq.scan_rows = rows;
    acq.scan_cols = cols;
    acq.scan_from = from;
  };
  if (options.scan_rows && options.scan_cols) {
    fit(options.scan_rows, options.scan_cols, ScanShapeFrom::given, "the given scan shape");
  } else if (options.scan_cols) {
    rows_of(options.scan_cols, ScanShapeFrom::given_row_length, "the given row length of");
  } else if (hdr.scan_x) {
    fit(*hdr.scan_y, *hdr.scan_x, ScanShapeFrom::hdr_scan_xy, "the .hdr's ScanY x ScanX");
  } else if (hdr.frames_per_trigger && *hdr.frames_per_trigger > 1) {
    rows_of(*hdr.frames_per_trigger, ScanShapeFrom::frames_per_trigger, "the .hdr's Frames per Trigger,");
  } else if (n == 1) {
    acq.scan_rows = acq.scan_cols = 1;
    acq.scan_from = ScanShapeFrom::single_frame;
  }
  if (hdr.frames_in_acquisition && *hdr.frames_in_acquisition != n)
    acq.warnings.push_back("the .hdr says " + std::to_string(*hdr.frames_in_acquisition) +
                           " frames in acquisition, the files hold " + std::to_string(n) +
                           (n < *hdr.frames_in_acquisition ? " (interrupted acquisition?)" : ""));
  const std::uint64_t kept = acq.has_scan_shape() ? std::uint64_t(acq.scan_rows) * acq.scan_cols : n;
  acq.frames.resize(kept);
  for (std::uint64_t i = 0; i < kept; ++i) {
    const std::uint64_t g = order[i];
    const std::size_t fi = std::upper_bound(base.begin(), base.end(), g) - base.begin() - 1;
    acq.frames[i] = {file_rank[fi], (g - base[fi]) * acq.frame_bytes + acq.header_bytes};
  }

  // 6. Metadata: the first frame's header, the first and last frame's times, the .hdr.
  auto header_of = [&](std::uint64_t g) {
    const std::size_t fi = std::upper_bound(base.begin(), base.end(), g) - base.begin() - 1;
    std::vector<std::uint8_t> h(acq.header_bytes);
    read_at(open_regular(files[fi].path), h.data(), h.size(), (g - base[fi]) * acq.frame_bytes, files[fi].path);
    return full_check(fi, g - base[fi], h.data());
  };
  const FrameHeader first = header_of(order.front()), last = header_of(order.back());
  const PixelFormat& f = acq.format;
  nlohmann::json hdr_json = nlohmann::json::object();
  for (const auto& [k, v] : hdr.entries) hdr_json[k] = v;
  auto when = [](const FrameHeader& h) { return h.mq1a ? h.timestamp_ns : h.timestamp; };
  char chip_select[16];
  std::snprintf(chip_select, sizeof(chip_select), "%02X", first.chip_select);
  acq.metadata = {
      {"reader", "merlin"},
      {"files", acq.files},
      {"frames_per_file", acq.file_frames},
      {"frames_found", acq.frames_found},
      {"frames", acq.frames.size()},
      {"hdr_file", acq.hdr_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(acq.hdr_file)},
      {"pixel_type", pixel_type_name(f.stored)},
      {"raw", f.raw},
      {"counter_depth", f.counter_depth ? nlohmann::json(f.counter_depth) : nlohmann::json(nullptr)},
      {"layout", layout_name(f.layout)},
      {"chips", f.chips},
      {"chip_select", chip_select},
      {"chip_type", first.chip_type},
      {"stored_shape", {first.height, first.width}},
      {"frame_shape", {f.rows, f.cols}},
      {"dtype", dtype_name(f.out_dtype)},
      {"header_bytes", acq.header_bytes},
      {"payload_bytes", f.payload_bytes},
      {"shutter_s", first.shutter_s},
      {"exposure_s", first.mq1a ? nlohmann::json(double(first.exposure_ns) * 1e-9) : nlohmann::json(first.shutter_s)},
      {"counter", first.counter},
      {"colour_mode", first.colour_mode},
      {"gain_mode", first.gain_mode},
      {"thresholds_kev", first.thresholds_kev},
      {"first_frame_time", when(first)},
      {"last_frame_time", when(last)},
      {"software_version", hdr.software_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(hdr.software_version)},
      {"gap_fill_mode", hdr.gap_fill_mode.empty() ? nlohmann::json(nullptr) : nlohmann::json(hdr.gap_fill_mode)},
      {"scan_shape", acq.has_scan_shape() ? nlohmann::json({acq.scan_rows, acq.scan_cols}) : nlohmann::json(nullptr)},
      {"scan_shape_from", scan_shape_from_name(acq.scan_from)},
      {"orientation", "rows as stored (LiberTEM's convention; rosettasciio flips rows): docs/conventions.md"},
      {"hdr", hdr_json},
      {"warnings", acq.warnings},
  };
  return acq;
}

void verify_frame_header(const MerlinAcquisition& acq, std::size_t k, const std::uint8_t* header) {
  if (k >= acq.frames.size())
    throw InvalidArgument("Merlin: frame " + std::to_string(k) + " of " + std::to_string(acq.frames.size()));
  const MerlinFrame& fr = acq.frames[k];
  const std::string& path = acq.files.at(fr.file);
  const Where w{path, (fr.offset - acq.header_bytes) / acq.frame_bytes, fr.offset - acq.header_bytes};
  QuickHeader q;
  if (!quick_header(header, acq.header_bytes, &q)) {
    parse_frame_header(header, acq.header_bytes, w);  // throws naming the field
    throw FormatError("Merlin frame header of " + w.text() + ": malformed fields 0-8");
  }
  if (q.shape != acq.header_shape)
    throw FormatError("Merlin frame header of " + w.text() + ": fields 2-7 (header size, chips, width, height, pixel "
                      "type, layout) '" + std::string(q.shape) + "' differ from the first frame's '" +
                      acq.header_shape + "' (the file changed since it was opened?)");
  if (q.sequence != acq.first_sequence + k)
    throw FormatError("Merlin frame header of " + w.text() + ": sequence number " + std::to_string(q.sequence) +
                      ", expected " + std::to_string(acq.first_sequence + k) +
                      " (the file changed since it was opened?)");
}

}  // namespace qgpu::io::merlin
