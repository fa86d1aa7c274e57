// The MPI scan split: each rank's slab, the step protocol (request, compute on every slab, status exchange, gather)
// and the gathered products rank 0 hands to the one-process workflow.
#include "mpi/split_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <typeinfo>

#include "device/device.hpp"
#include "mpi/comm.hpp"
#include "mpi/slabs.hpp"
#include "optics/resolve.hpp"
#include "remote/device_guard.hpp"

namespace qgpu::mpi {

bool built_with_mpi() { return true; }

namespace {

// A step failed somewhere; rank 0 raised the error, the others wait for its next request.
struct StepFailed {};

// Where this rank's slab lives and what rank 0 knows of every rank.
struct Context {
  int rank = 0, size = 1;
  std::vector<Slab> slabs;
  Shape4D whole;
  std::optional<Dataset> slab;
  nlohmann::json ranks = nlohmann::json::array();  // rank 0: each rank's host, device, rows, residency
  std::size_t resident_bytes = 0;                  // rank 0: over all ranks
  nlohmann::json mpi() const {
    nlohmann::json j = describe_slabs(slabs);
    j["ranks_detail"] = ranks;
    return j;
  }
};

std::string rows_of(const Context& c, int rank) {
  if (c.slabs.empty()) return "";
  const Slab& s = c.slabs[std::size_t(rank)];
  return " (scan rows " + std::to_string(s.row0) + ".." + std::to_string(s.row0 + s.rows - 1) + " of " +
         std::to_string(c.whole.scan_rows) + ")";
}

// The error kind travels with the message so that rank 0 raises the same typed error.
std::string kind_of(const std::exception& e) {
  if (dynamic_cast<const OutOfMemory*>(&e)) return "OutOfMemory";
  if (dynamic_cast<const IoError*>(&e)) return "IoError";
  if (dynamic_cast<const FormatError*>(&e)) return "FormatError";
  if (dynamic_cast<const RegionError*>(&e)) return "RegionError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const BackendUnavailable*>(&e)) return "BackendUnavailable";
  if (dynamic_cast<const InvalidArgument*>(&e)) return "InvalidArgument";
  if (dynamic_cast<const DeviceError*>(&e)) return "DeviceError";
  return "Error";
}

[[noreturn]] void raise(const std::string& kind, const std::string& msg) {
  if (kind == "OutOfMemory") throw OutOfMemory(msg);
  if (kind == "IoError") throw IoError(msg);
  if (kind == "FormatError") throw FormatError(msg);
  if (kind == "RegionError") throw RegionError(msg);
  if (kind == "DTypeError") throw DTypeError(msg);
  if (kind == "BackendUnavailable") throw BackendUnavailable(msg);
  if (kind == "InvalidArgument") throw InvalidArgument(msg);
  if (kind == "DeviceError") throw DeviceError(msg);
  throw Error(msg);
}

// Runs `compute` on every rank, then exchanges the status: when any rank failed, rank 0 raises one error naming
// each failed rank (its scan rows) and its message; the other ranks throw StepFailed. Every rank calls this in the
// same order, so no rank waits in a collective that another has left.
template <class F> auto step(const Context& c, const std::string& what, F&& compute) {
  using R = decltype(compute());
  std::optional<R> result;
  std::string failure;  // "kind\nmessage"
  try {
    result.emplace(compute());
  } catch (const std::exception& e) {
    failure = kind_of(e) + "\n" + e.what();
  } catch (...) {
    failure = "Error\nunknown failure";
  }
  if (all_ok(failure.empty())) return std::move(*result);
  const std::vector<std::string> all = gather_strings(failure);
  if (c.rank != 0) throw StepFailed{};
  // One line per distinct message, naming the ranks (and their scan rows) that gave it.
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // message -> ranks
  std::string kind;
  int failed = 0;
  for (int r = 0; r < int(all.size()); ++r) {
    const std::string& f = all[std::size_t(r)];
    if (f.empty()) continue;
    const std::size_t nl = f.find('\n');
    const std::string k = f.substr(0, nl), m = f.substr(nl + 1);
    kind = failed++ == 0 || kind == k ? k : "Error";
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == m; });
    if (g == groups.end()) groups.push_back({m, {r}});
    else g->second.push_back(r);
  }
  std::string msg;
  for (const auto& [m, ranks] : groups) {
    if (!msg.empty()) msg += "; ";
    if (int(ranks.size()) == c.size && c.size > 1) {
      msg += "every rank: " + m;
      continue;
    }
    msg += ranks.size() == 1 ? "MPI rank " : "MPI ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i)
      msg += (i ? ", " : "") + std::to_string(ranks[i]) + rows_of(c, ranks[i]);
    msg += ": " + m;
  }
  raise(kind, what + " failed on " + std::to_string(failed) + " of " + std::to_string(c.size) + " MPI ranks: " + msg);
}

// A slab's products as the whole scan's: shapes and sizes of the whole, the split in parameters.mpi.
void as_whole(Provenance& p, const Context& c, std::vector<std::size_t> out_shape) {
  p.input_shape = c.whole.dims();
  p.output_shape = std::move(out_shape);
  if (p.dense_bytes) {
    p.dense_bytes = c.whole.nbytes(dtype_size(c.slab->dtype()));
    p.resident_bytes = c.resident_bytes;
  }
  p.parameters["mpi"] = c.mpi();
}

template <class T> Image<T> gather_rows(const Context& c, const Image<T>& part) {
  std::vector<std::uint8_t> bytes = gather_bytes(part.data.data(), part.data.size() * sizeof(T));
  Image<T> img;
  if (c.rank != 0) return img;
  img.rows = c.whole.scan_rows;
  img.cols = c.whole.scan_cols;
  if (bytes.size() != img.rows * img.cols * sizeof(T))
    throw Error("MPI: the gathered slabs hold " + std::to_string(bytes.size()) + " bytes, not the " +
                std::to_string(img.rows) + "x" + std::to_string(img.cols) + " scan");
  img.data.resize(img.rows * img.cols);
  std::memcpy(img.data.data(), bytes.data(), bytes.size());
  img.provenance = part.provenance;
  as_whole(img.provenance, c, {img.rows, img.cols});
  return img;
}

// What an MPI run's gathered sums need (signed and float data: one process).
const std::string kSplitSums = "the MPI scan split (gathered uint64 sums)";

struct Answer {
  Image<std::uint64_t> image;
  dpc::ComResult com;
  std::optional<Dataset> crop;
};

detector::Center center_of(const nlohmann::json& j) { return {j["center"][0].get<double>(), j["center"][1].get<double>()}; }

// One request on every rank: this rank's slab product, the status exchange, then the gather (rank 0's answer).
Answer answer(const Context& c, const nlohmann::json& req) {
  const std::string op = req["op"];
  const Dataset& ds = *c.slab;
  Answer a;
  if (op == "com") {
    const dpc::ComResult part = step(c, "center of mass", [&] { return dpc::center_of_mass(ds); });
    a.com.com_row = gather_rows(c, part.com_row);
    a.com.com_col = gather_rows(c, part.com_col);
    const std::vector<std::uint64_t> empty = sum_at_root({part.empty_frames});
    if (c.rank == 0) {
      a.com.empty_frames = empty[0];
      a.com.provenance = part.provenance;
      as_whole(a.com.provenance, c, {c.whole.scan_rows, c.whole.scan_cols});
    }
    return a;
  }
  if (op == "crop") {  // the whole scan's frames cut to a detector region (SSB's BF disk), at rank 0
    const Region r{req["row0"], req["col0"], req["rows"], req["cols"]};
    HostArray4D part = step(c, "cropping the frames", [&] { return ds.read({}, r); });
    std::vector<std::uint8_t> bytes = gather_bytes(part.bytes.data(), part.bytes.size());
    if (c.rank == 0) {
      HostArray4D whole;
      whole.shape = {c.whole.scan_rows, c.whole.scan_cols, r.rows, r.cols};
      whole.dtype = part.dtype;
      whole.bytes.assign(bytes.begin(), bytes.end());
      a.crop = workflow::crop_like(ds, std::move(whole), r, {{"mpi", c.mpi()}});
    }
    return a;
  }
  if (op == "sum_pattern") {
    Image<std::uint64_t> part =
        step(c, "sum pattern", [&] { return detector::sum_pattern(ds).take_counts(kSplitSums); });
    a.image.data = sum_at_root(part.data);
    if (c.rank == 0) {
      a.image.rows = part.rows;
      a.image.cols = part.cols;
      a.image.provenance = part.provenance;
      as_whole(a.image.provenance, c, {part.rows, part.cols});
    }
    return a;
  }
  const Image<std::uint64_t> part = step(c, op, [&] {
    if (op == "bf") return detector::bf(ds, req["radius"].get<double>(), center_of(req)).take_counts(kSplitSums);
    if (op == "adf")
      return detector::adf(ds, req["inner"].get<double>(), req["outer"].get<double>(), center_of(req))
          .take_counts(kSplitSums);
    if (op == "virtual_image") {
      detector::Mask m = detector::from_weights(req["rows"], req["cols"], req["weights"].get<std::vector<std::uint32_t>>());
      m.description = req["description"];
      Image<std::uint64_t> img = detector::virtual_image(ds, m).take_counts(kSplitSums);
      img.provenance.operation = req["operation"];
      return img;
    }
    throw Error("MPI: unknown request '" + op + "'");
  });
  a.image = gather_rows(c, part);
  return a;
}

// Rank 0's view: every product a request to all ranks, answered by the gathered slabs.
class GatheredProducts : public workflow::ScanProducts {
 public:
  explicit GatheredProducts(const Context& c) : c_(c) {}
  const Shape4D& shape() const override { return c_.whole; }
  Backend backend() const override { return c_.slab->backend(); }
  const nlohmann::json& metadata() const override { return c_.slab->metadata(); }
  nlohmann::json describe() const override {
    nlohmann::json d = qgpu::describe(*c_.slab);
    d["shape"] = c_.whole.dims();
    d["nbytes"] = d["dense_bytes"] = c_.whole.nbytes(dtype_size(c_.slab->dtype()));
    d["resident_bytes"] = c_.resident_bytes;
    d["mpi"] = c_.mpi();
    return d;
  }
  std::string summary() const override {
    const Shape4D& s = c_.whole;
    char buf[256];
    std::snprintf(buf, sizeof buf, "loaded %zux%zux%zux%zu %s on %s as %d MPI ranks (row slabs):", s.scan_rows,
                  s.scan_cols, s.det_rows, s.det_cols, dtype_name(c_.slab->dtype()).c_str(),
                  backend_name(backend()).c_str(), c_.size);
    std::string out = buf;
    for (const auto& r : c_.ranks) {
      std::snprintf(buf, sizeof buf, "\n  rank %d on %s: scan rows %zu..%zu, %s %s%s, loaded in %.3f s", r["rank"].get<int>(),
                    r["host"].get<std::string>().c_str(), r["row0"].get<std::size_t>(),
                    r["row0"].get<std::size_t>() + r["rows"].get<std::size_t>() - 1,
                    r["representation"].get<std::string>().c_str(), r["residency"].get<std::string>().c_str(),
                    r["device"].get<int>() >= 0 ? (" (GPU " + std::to_string(r["device"].get<int>()) + ")").c_str() : "",
                    r["load_s"].get<double>());
      out += buf;
    }
    return out + "\n  products gathered at rank 0; the whole-field steps (DPC centring, rotation, iDPC on the gathered CoM; "
                 "SSB and the rotation's parallax fallback on the gathered BF-disk pixels) run at rank 0";
  }
  SumImage sum_pattern() override { return ask({{"op", "sum_pattern"}}).image; }
  SumImage virtual_image(const detector::Mask& m, const std::string& operation) override {
    return ask({{"op", "virtual_image"}, {"rows", m.rows}, {"cols", m.cols}, {"weights", m.weights},
                {"description", m.description}, {"operation", operation}})
        .image;
  }
  SumImage bf(double radius, detector::Center center) override {
    return ask({{"op", "bf"}, {"radius", radius}, {"center", {center.first, center.second}}}).image;
  }
  SumImage adf(double inner, double outer, detector::Center center) override {
    return ask({{"op", "adf"}, {"inner", inner}, {"outer", outer}, {"center", {center.first, center.second}}}).image;
  }
  dpc::ComResult center_of_mass() override { return ask({{"op", "com"}}).com; }
  Dataset detector_crop(const Region& r) override {
    std::printf("mpi: gathering the frames' detector rows %zu..%zu, cols %zu..%zu at rank 0 (a whole-field method)\n",
                r.row0, r.row0 + r.rows - 1, r.col0, r.col0 + r.cols - 1);
    return *ask({{"op", "crop"}, {"row0", r.row0}, {"col0", r.col0}, {"rows", r.rows}, {"cols", r.cols}}).crop;
  }
  dpc::RotationResult calibrate_rotation(const dpc::DpcResult& d) override {
    dpc::RotationResult com = dpc::calibrate_rotation(d);
    if (com.confidence >= dpc::kComTrusted) {  // what dpc::calibrate_rotation(ds, d) answers then, without the frames
      com.provenance.parameters["decided_by"] = "com_curl";
      return com;
    }
    // the parallax fallback needs the BF-disk pixels of every frame: gathered at rank 0 (its disk fit on the box
    // equals the whole detector's up to the rounding of the moved centre; a given centre / radius is used as is)
    const detector::DiskFit disk_used = disk();
    const optics::ProbeOptics cal = optics::resolve(metadata(), {}, "parallax", optics::Missing::leave);
    const double radius = std::max(
        disk_used.radius, optics::nominal_disk_radius(cal.semiangle_mrad, cal.detector_mrad_per_pixel).value_or(0.0));
    const Region r_box = workflow::bf_disk_box(disk_used, radius, c_.whole.det_rows, c_.whole.det_cols);
    const Dataset box = detector_crop(r_box);
    std::optional<std::pair<double, double>> center;
    if (given_center_) center = std::pair<double, double>{given_center_->first - double(r_box.row0),
                                                          given_center_->second - double(r_box.col0)};
    dpc::RotationResult r = dpc::calibrate_rotation(box, d, center, given_radius_, {r_box.row0, r_box.col0});
    r.provenance.parameters["mpi"] = "parallax on the BF-disk box of every frame, gathered at rank 0";
    return r;
  }

 private:
  Answer ask(const nlohmann::json& req) {
    broadcast(req.dump());
    return answer(c_, req);
  }
  const Context& c_;
};

double slowest_load(const Context& c) {
  double s = 0;
  for (const auto& r : c.ranks) s = std::max(s, r["load_s"].get<double>());
  return s;
}

int device_for(const std::string& backend, int local_rank) {
  const DeviceReport& d = detect();
  if (backend == "cpu" || !d.cuda_available || d.device_count <= 0) return -1;
  return local_rank % d.device_count;
}

}  // namespace

void run_split(const std::string& file, const io::LoadOptions& options,
               const std::function<void(workflow::ScanProducts&)>& workflow) {
  Session& session = mpi::session();
  Context c;
  c.rank = session.rank();
  c.size = session.size();
  int device = -1;
  std::optional<remote::DeviceGuard> on_device;  // this rank's GPU for its load and every product
  io::LoadOptions lo = options;
  if (c.rank != 0) lo.progress = nullptr;  // one progress bar (rank 0's)

  bool ok = true;
  double load_s = 0;
  try {  // the load: every rank plans the whole region, takes its rows of it and loads them
    c.slab = step(c, "loading the slabs", [&] {
      device = device_for(options.backend, session.local_rank());
      on_device.emplace(device);  // inside the step: a device that cannot be selected is reported like a failed load
      const io::LoadPlan plan = io::plan_load(file, options);
      c.whole = plan.out_shape;
      c.slabs = split_rows(plan.out_shape.scan_rows, c.size);
      const Slab& mine = c.slabs[std::size_t(c.rank)];
      lo.scan_region = Region{plan.scan.row0 + mine.row0 * plan.bin_scan, plan.scan.col0, mine.rows * plan.bin_scan,
                              plan.scan.cols};
      const auto t0 = std::chrono::steady_clock::now();
      Dataset ds = io::load(file, lo);
      load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return ds;
    });
    const Slab& mine = c.slabs[std::size_t(c.rank)];
    const nlohmann::json me = {{"rank", c.rank},         {"host", session.host()},
                               {"device", device},       {"row0", mine.row0},
                               {"rows", mine.rows},      {"representation", c.slab->representation()},
                               {"residency", c.slab->residency()}, {"resident_bytes", c.slab->resident_bytes()},
                               {"load_s", load_s}};
    for (const std::string& s : gather_strings(me.dump())) {
      c.ranks.push_back(nlohmann::json::parse(s));
      c.resident_bytes += c.ranks.back()["resident_bytes"].get<std::size_t>();
    }
  } catch (const StepFailed&) {
    ok = false;  // rank 0 reports; wait for its "done"
  } catch (...) {
    if (c.rank != 0) throw;  // not reached: every failure of a step is StepFailed on these ranks
    broadcast(nlohmann::json{{"op", "done"}, {"failed", true}}.dump());
    throw;
  }

  if (c.rank == 0) {
    try {
      GatheredProducts products(c);
      const auto t0 = std::chrono::steady_clock::now();
      workflow(products);
      std::printf("mpi: %d ranks; slowest slab load %.3f s; products, gathers and outputs %.3f s\n", c.size,
                  slowest_load(c), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } catch (...) {
      broadcast(nlohmann::json{{"op", "done"}, {"failed", true}}.dump());
      throw;
    }
    broadcast(nlohmann::json{{"op", "done"}, {"failed", false}}.dump());
    return;
  }
  for (;;) {  // ranks other than 0: answer rank 0's requests until it is done
    const nlohmann::json req = nlohmann::json::parse(broadcast(""));
    if (req["op"] == "done") {
      if (req["failed"].get<bool>() || !ok)
        throw RankStopped("MPI rank " + std::to_string(c.rank) + " stopped: the run failed (rank 0 reports why)");
      return;
    }
    try {
      answer(c, req);
    } catch (const StepFailed&) {
      // rank 0 raised the error; its "done" follows
    } catch (const Error&) {
      // raised alike on every rank (a gather over one message): rank 0 reports it; its "done" follows
    }
  }
}

}  // namespace qgpu::mpi
