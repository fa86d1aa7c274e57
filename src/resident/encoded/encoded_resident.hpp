#pragma once
// EncodedResident: a whole acquisition's native counts kept in the compact exact encoded-v1 form (see
// docs/design.md), on the GPU (backend cuda) or in host memory (backend cpu, the reference), filled batch by batch
// with append() and queried without ever decoding the dense cube whole. Cheap to copy: copies share the storage.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "device/device.hpp"
#include "resident/basis/radial_basis.hpp"
#include "resident/binned/scan_binned.hpp"
#include "resident/dataset.hpp"
#include "resident/encoded/cpu/encoded_cpu.hpp"
#include "resident/encoded/format.hpp"
#include "resident/encoded/layout.hpp"
#include "resident/shape.hpp"

struct CUstream_st;  // cudaStream_t without the CUDA headers

namespace qgpu {

class EncodedResident {
 public:
  static constexpr const char* kStorageSchema = encoded::kSchema;

  // An empty resident for `shape` counts of `dtype` (uint8/16/32), tiles of `tile` scan positions, streams chosen
  // by `policy` (format.hpp; default: QGPU_ENCODED_POLICY, else fast).
  EncodedResident(const Shape4D& shape, DType dtype, Backend backend, std::uint32_t tile = encoded::kDefaultTile,
                  encoded::Policy policy = encoded::default_policy());

  // Appends the next `count` frames in flat scan order (count * frame_pixels native counts, frame-major), in host
  // memory for the cpu backend and device memory for the cuda backend. Any batch size: frames short of a whole
  // tile wait in a staging tile; the last tile is encoded when the final frame arrives. cuda: all work on `stream`
  // (a cudaStream_t; the legacy default stream when null; successive appends on one stream), and `frames` may be
  // reused when append returns (it waits for its work on `stream`, never for the whole device). live (cuda, frames
  // whose pixel count is a multiple of 32): the encoded::LiveGroups bits of these frames (device memory, tiles of
  // layout().tile counted from frames[0]): the encoder visits only the marked groups of 32 pixels and chunks of 16
  // frames, when the append starts at a tile boundary (no staged frames); every chunk of a group with a nonzero
  // count must be marked. totals (cuda, optional): each frame's sum of counts (device memory, count uint64: the
  // decoder's encoded::LiveGroups::totals, a scan-binned copy's accumulation), taken as the frame totals of the
  // frames encoded straight from `frames` instead of summing them again.
  void append(const void* frames, std::size_t count, CUstream_st* stream = nullptr,
              const std::uint32_t* live = nullptr, const unsigned long long* totals = nullptr);
  // Before the first append: also build a radial basis (resident/basis/radial_basis.hpp) from every appended batch,
  // in the same pass (cuda: on the append's stream). Its centre is the request's or the disk fit of the first
  // batch's summed pattern. A basis that cannot be built (no disk, memory, a sum beyond uint32) is skipped with a
  // reason in radial_basis_report(), or raises when the request says required.
  void request_radial_basis(const RadialBasisRequest& request);
  // The complete, usable basis; nullptr without one (not carried by to_host / to_device).
  const RadialBasis* radial_basis() const;
  // null when none was requested; else the basis' describe() or {"built": false, "reason": ...}.
  nlohmann::json radial_basis_report() const;
  // Before the first append: also build a scan-binned copy (resident/binned/scan_binned.hpp) at request.bin from
  // every appended batch (cuda: on the append's stream). One that cannot be built (memory, a sum beyond uint32) is
  // dropped with a reason in scan_binned_report(), or raises when the request says required.
  void request_scan_binned(const ScanBinnedRequest& request);
  // The complete copy when its bin divides scan_bin (a query at that scan bin can decode it instead), else nullptr.
  // Not carried by to_host / to_device.
  std::shared_ptr<EncodedResident> scan_binned(std::size_t scan_bin) const;
  // null when none was requested; else {"bin", "shape", "built", "resident_bytes" | "reason", ...}.
  nlohmann::json scan_binned_report() const;
  std::size_t frames_appended() const;
  bool complete() const;  // every frame of the shape appended

  Backend backend() const;
  DType dtype() const;
  const Shape4D& shape() const;
  const encoded::Layout& layout() const;
  std::string representation() const { return "encoded"; }
  std::string storage_schema() const { return kStorageSchema; }
  std::size_t resident_bytes() const;  // everything held: streams, directories, totals, sum pattern, staging
  std::size_t dense_bytes() const { return shape().elements() * dtype_size(dtype()); }
  // cuda: the encoder's stage times summed over the appends so far (one line; see encode_kernels.hpp), "" for cpu.
  std::string encoder_stages() const;
  // cuda: the same as numbers (ms; all 0 for cpu), for the load timeline's per-batch differences.
  struct EncoderTotals {
    double kernel = 0, offsets = 0, compact = 0, host_wait = 0, finish = 0, order = 0, alloc = 0;
  };
  EncoderTotals encoder_totals() const;

  // Queries (need complete(); else InvalidArgument). Same integers on both backends.
  // Sum over the listed pixel offsets (det_row * det_cols + det_col) times their weights, per scan position.
  std::vector<std::uint64_t> masked_sum(const std::vector<std::uint32_t>& pixels,
                                        const std::vector<std::uint32_t>& weights) const;
  // Up to 3 weightings of the same pixels in one decode (CoM: det_row and det_col weights): result[k][frame].
  std::vector<std::vector<std::uint64_t>> masked_sums(const std::vector<std::uint32_t>& pixels,
                                                      const std::vector<std::vector<std::uint32_t>>& weights) const;
  // weight x (frame total - sum over the listed pixels), per scan position, modulo 2^64: the sums of the mask that
  // gives `weight` to every pixel not listed (cheaper than masked_sum when the listed pixels' streams are).
  std::vector<std::uint64_t> complement_sum(const std::vector<std::uint32_t>& complement, std::uint32_t weight) const;
  // Which streams a uniform mask's sums decode: its own pixels', or the others' (rest_cheaper: the frame totals
  // minus their sums give the mask's), whichever cost less (cost of a pixel's streams ~ min(its total count,
  // frames): all-zero streams are free, sparse ones cost their nonzeros, dense ones every frame; a tie goes to the
  // mask's own pixels when tie_to_own). Only split_by_cost makes one: its list is in decode order, each pixel once,
  // so the sums below upload it as it is. O(listed pixels + frame pixels / 64) host work.
  class PixelSplit {
   public:
    const std::vector<std::uint32_t>& pixels() const { return pixels_; }  // the side to decode, in decode order
    bool rest_cheaper() const { return rest_cheaper_; }

   private:
    friend class EncodedResident;
    std::vector<std::uint32_t> pixels_;
    bool rest_cheaper_ = false;
  };
  // The mask of the listed pixels (listed_own) or of every pixel not listed (!listed_own); repeats count once;
  // RegionError for a pixel outside the frame.
  PixelSplit split_by_cost(const std::vector<std::uint32_t>& listed, bool listed_own, bool tie_to_own = true) const;
  // The 0/1 mask own[p] != 0 over frame_pixels values.
  PixelSplit split_by_cost(const std::uint8_t* own, bool tie_to_own = true) const;
  // The sums of the mask that gives `weight` to the split's own pixels, per scan position, modulo 2^64: over its
  // list's streams, or weight x (frame total - their sums) when rest_cheaper.
  std::vector<std::uint64_t> uniform_sum(const PixelSplit& split, std::uint32_t weight) const;
  // The centre-of-mass sums of a 0/1 mask over det_rows x det_cols (null: every pixel) per frame: [0] S = sum of
  // counts, [1] Sr = sum of counts x det_row, [2] Sc = sum of counts x det_col, modulo 2^64. One decode of the
  // mask's streams or, when the pixels it leaves out cost less, the frame's totals and moment totals minus theirs
  // (the moment totals are computed once, on first use, by one decode of every stream: prepare_moments); without a
  // mask, no decode after the first. `used` gets "masked sums", "totals minus complement" or "totals".
  std::vector<std::vector<std::uint64_t>> moment_sums(const std::uint8_t* mask, std::string* used = nullptr) const;
  // cuda: the same into d_out ([3][frames] device uint64) on `stream` without waiting (the moment totals, when
  // first needed, are computed and checked before); *d_error (a device int, zeroed by the caller) is set to 1 on a
  // malformed stream.
  void moment_sums_device(const std::uint8_t* mask, std::uint64_t* d_out, int* d_error, CUstream_st* stream,
                          std::string* used = nullptr) const;
  // Computes the moment totals now when not done yet: from the resident's radial basis when it has a usable one
  // (its last boundary is the whole detector: three image reads, no decode), else by one decode of every stream.
  void prepare_moments() const;
  // The same from `basis`, a usable radial basis of this resident's frames binned b x b over the scan (a scan-binned
  // copy as it completes: b its bin); the decode when the basis's count totals differ from this resident's frame
  // totals or its shape does not match.
  void prepare_moments(const RadialBasis& basis, std::size_t b) const;
  // Where the moment totals came from: "radial basis", "decode", or "" while not computed.
  std::string moments_source() const;
  // Positions of a pixel list's entries, densest pixels (by sum pattern) first: the order the GPU masked sums take
  // their lists in. Their warps take 32 consecutive entries and a warp costs as much as its densest stream, so a
  // few dense pixels scattered among sparse ones (the ring just outside a bright-field disk, in the disk's
  // complement; rows crossing the disk, for CoM) made many warps slow. Sums do not depend on the order.
  std::vector<std::uint32_t> decode_order(const std::vector<std::uint32_t>& pixels) const;
  // Whether the pixels are in that order already (strictly increasing rank; each inside the frame).
  bool in_decode_order(const std::vector<std::uint32_t>& pixels) const;
  // cuda: frame_pixels device weights of 1, made on first use and kept with the resident.
  const std::uint32_t* device_ones() const;
  std::vector<std::uint64_t> frame_totals() const;  // per scan position (computed at append)
  const std::vector<std::uint64_t>& sum_pattern() const;  // per detector pixel, over all frames (kept at append)
  // A scan x detector rectangle of exact counts (Region{} = whole extent); RegionError when outside.
  HostArray4D read(const Region& scan_region = {}, const Region& detector_region = {}) const;
  // The same into `dst` of exactly the rectangle's size (Dataset::read_into checks it).
  void read_into(const Region& scan_region, const Region& detector_region, void* dst, std::size_t bytes) const;
  // The listed pixels' counts at every scan position, native dtype, [j][frame] (e.g. the SSB bright-field gather).
  std::vector<std::uint8_t> pixels(const std::vector<std::uint32_t>& pixel_offsets) const;
  // Frame `index` (flat scan order), frame_pixels native counts.
  std::vector<std::uint8_t> frame(std::size_t index) const;

  // The same encoded bytes on the other side, without re-encoding: a host copy of a GPU resident, or a GPU copy
  // of a host one (each returns *this when already there). Need complete().
  EncodedResident to_host() const;
  EncodedResident to_device() const;

  // The tiles as decoders see them (host pointers for cpu, device pointers for cuda), and for the cuda backend
  // their device-side copy and the device totals / sum pattern (for kernels of the query domains).
  const std::vector<encoded::TileRef>& tiles() const;
  const encoded::TileRef* device_tiles() const;
  const std::uint64_t* device_frame_totals() const;
  // Tile t's encoded bytes and directory copied to the host (pixel_sums left empty): the format, for tests.
  encoded::cpu::HostTile tile_bytes(std::size_t t) const;

 private:
  struct Storage;
  std::shared_ptr<Storage> s_;
  void encode_frames(const void* frames, std::size_t count, CUstream_st* stream, const std::uint32_t* live = nullptr,
                     const unsigned long long* totals = nullptr);
  void start_basis(const void* frames, std::size_t count, CUstream_st* stream);
  bool feed_scan_binned(const void* frames, std::size_t count, CUstream_st* stream, RadialBasis* with);
  void plan_payload_arena();
  void trim_payload_arena(CUstream_st* stream);
  void require_complete(const char* what) const;
  bool moments_from_basis(const RadialBasis& basis, std::size_t b) const;  // (moments_mutex held)
  void moments_by_decode() const;                                          // (moments_mutex held)
  // The query bodies; ordered: a PixelSplit's list (uploaded unchecked); ones: one weighting of 1 (weights unused).
  std::vector<std::vector<std::uint64_t>> masked_sums_listed(const std::vector<std::uint32_t>& pixels,
                                                             const std::vector<std::vector<std::uint32_t>>& weights,
                                                             bool ordered, bool ones) const;
  std::vector<std::uint64_t> masked_ones_listed(const std::vector<std::uint32_t>& pixels) const;
  std::vector<std::uint64_t> complement_sum_listed(const std::vector<std::uint32_t>& complement, std::uint32_t weight,
                                                   bool ordered) const;
};

// Dataset::to_encoded of a dense cpu or cuda dataset with a radial basis (and a scan-binned copy when asked) built
// in the same pass (one batch: the basis centre, unless given, is the whole scan's disk fit). An encoded dataset
// comes back as it is.
Dataset encode_with_radial_basis(const Dataset& dense, const RadialBasisRequest& basis,
                                 std::uint32_t tile = encoded::kDefaultTile, const ScanBinnedRequest& binned = {});

}  // namespace qgpu
