#include "io/hdf5/vulkan/load_vulkan.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "device/device.hpp"
#include "device/vulkan/vk_context.hpp"
#include "device/vulkan/vk_resident.hpp"
#include "io/hdf5/codec/bitshuffle_format.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/source/frame_codec.hpp"

namespace qgpu::vulkan::shaders {
extern const Spirv bitshuffle_lz4;
}  // namespace qgpu::vulkan::shaders

namespace qgpu::io {

namespace vk = qgpu::vulkan;

namespace {

constexpr std::size_t kMaxBlockBytes = 8192;  // the shader's shared-memory block

struct Block {  // bitshuffle_lz4.comp's Block
  std::uint32_t src, len, dst, bytes, chunk, kind, pad0, pad1;
};
static_assert(sizeof(Block) == 32);

const char* status_text(std::uint32_t s) {
  switch (s) {
    case 1: return "an LZ4 block reads past its end";
    case 2: return "an LZ4 block decodes past its size";
    case 3: return "an LZ4 match offset points before the block";
    case 4: return "an LZ4 block decodes to fewer bytes than its size";
    default: return "LZ4 stream damaged";
  }
}

}  // namespace

std::string vulkan_shader_decode_unsupported(const LoadPlan& p) {
  const FileInfo& fi = p.info;
  if (fi.transposed.present || fi.sparse.present()) return "Fortran-order or event data (read by the host)";
  if (fi.codec.kind == FrameCodecKind::merlin) return "Merlin records (their shader decoder is still to come)";
  if (fi.codec.kind == FrameCodecKind::plain) {
    if (fi.records.empty()) return "an uncompressed HDF5 dataset (read by HDF5 on the host)";
  } else {
    if (!fi.bitshuffle_lz4 || !fi.one_frame_per_chunk || fi.filters.size() != 1 || fi.filters[0].id != 32008)
      return "chunks other than bitshuffle+LZ4 (HDF5 filter 32008 alone) of one frame each";
    if (fi.swap_bytes()) return "big-endian bitshuffle elements";
    if (fi.bitshuffle_block_elems * dtype_size(fi.dtype) > kMaxBlockBytes || fi.bitshuffle_block_elems % 8)
      return "bitshuffle blocks of " + std::to_string(fi.bitshuffle_block_elems) +
             " elements (the shader takes up to " + std::to_string(kMaxBlockBytes) +
             " bytes, a multiple of 8 elements)";
  }
  if (!fi.plain_bits() || fi.stored_as) return "elements that are not plain counts of their dtype";
  if (is_float_dtype(fi.dtype) || dtype_size(fi.dtype) > 4) return dtype_name(fi.dtype) + " elements";
  if (!p.full_frames() || p.binned()) return "detector cropping or binning (the shader writes whole stored frames)";
  if (p.zero_bad_pixels) return "pixel-mask zeroing";
  if (fi.frame_bytes() % 4) return "frames of " + std::to_string(fi.frame_bytes()) + " bytes (not whole 32-bit words)";
  return "";
}

Dataset load_vulkan_shaders(const LoadPlan& plan, const std::function<void(double)>& progress) {
  LoadPlan p = plan;
  p.representation = "dense";
  const FileInfo& fi = p.info;
  const bool plain = fi.codec.kind == FrameCodecKind::plain;
  if (!plain) {
    bitshuffle_params(fi);  // damaged cd_values refused as on the other paths
    require_decoded_elements(fi);
  }
  const std::size_t es = dtype_size(fi.dtype), frame_bytes = fi.frame_bytes();
  const codec::ChunkGeometry g{es, fi.shape.frame_pixels(), plain ? 8 : fi.bitshuffle_block_elems};
  LoadTiming timing;
  const ReadPlan rp = plan_reads(p, false, timing);
  if (!rp.direct) throw Error("vulkan shader load: the plan is not direct");
  const ChunkSources& src = rp.src;

  const double t_setup = now_s();
  vk::Context& c = vk::Context::get();
  const std::size_t input_bytes = (rp.max_buffer + 3) & ~std::size_t(3);
  if (input_bytes > c.max_buffer_bytes() || input_bytes > std::numeric_limits<std::uint32_t>::max())
    throw InvalidArgument("vulkan load: a read batch of " + std::to_string(rp.max_buffer) +
                          " bytes exceeds one storage buffer; lower batch_bytes");
  const std::size_t max_blocks = rp.max_chunks * (plain ? 1 : g.blocks() + 1);
  auto resident = std::make_shared<vk::Resident>(nullptr, p.out_shape, p.out_dtype, /*zero=*/false);
  vk::Buffer input(std::max<std::size_t>(input_bytes, 4)), blocks(max_blocks * sizeof(Block)),
      status(std::max<std::size_t>(rp.max_chunks, 1) * 4);
  std::vector<std::uint8_t> host(input_bytes + 4);
  std::vector<Block> table;
  table.reserve(max_blocks);
  std::vector<std::uint32_t> st;
  const vk::Pipeline& pipe = c.pipeline(vk::shaders::bitshuffle_lz4, 4, 3 * 4);
  timing.setup = now_s() - t_setup;

  if (progress) progress(0.0);
  for (const ReadBatch& batch : rp.batches) {
    double t0 = now_s();
    rp.reader->read(batch, host.data());
    timing.read += now_s() - t0;
    t0 = now_s();
    // the block framing of every chunk, checked (the LZ4 streams are checked by the shader)
    table.clear();
    std::vector<std::pair<std::size_t, std::size_t>> per_segment;  // (segment, first block) in order
    std::size_t seg = 0;
    for (std::size_t i = 0; i < batch.chunks; ++i) {
      const std::size_t frame = batch.first_chunk + i;  // direct: load order is the output frame order
      while (resident->segments()[seg].first_frame + resident->segments()[seg].frames <= frame) ++seg;
      if (per_segment.empty() || per_segment.back().first != seg) per_segment.emplace_back(seg, table.size());
      const auto& s = resident->segments()[seg];
      const std::uint64_t off = batch.chunk_dst[i], size = src.chunks[frame].size;
      const std::uint8_t* chunk = host.data() + off;
      const auto fail = [&](const std::string& why) { rp.throw_decode_error(p, frame, why); };
      const std::uint32_t frame_word = std::uint32_t((frame - s.first_frame) * frame_bytes / 4);
      if (plain) {  // the record as it is (byte-swapped per element when big-endian)
        if (size != frame_bytes)
          fail("record of " + std::to_string(size) + " bytes, the frame has " + std::to_string(frame_bytes));
        table.push_back({std::uint32_t(off), std::uint32_t(size), frame_word, std::uint32_t(size), std::uint32_t(i),
                         fi.swap_bytes() ? 2u : 1u, 0, 0});
        continue;
      }
      if (size < codec::kChunkHeaderBytes)
        fail("chunk of " + std::to_string(size) + " bytes, shorter than its 12-byte header");
      if (codec::read_be64(chunk) != frame_bytes)
        fail("header says " + std::to_string(codec::read_be64(chunk)) + " decoded bytes, the frame has " +
             std::to_string(frame_bytes));
      if (codec::read_be32(chunk + 8) != g.block_elems * es)
        fail("header block size " + std::to_string(codec::read_be32(chunk + 8)) + " differs from the dataset's " +
             std::to_string(g.block_elems * es));
      codec::BlockCursor cur(g);
      for (; !cur.done(); cur.next(codec::read_be32(chunk + cur.length_at()))) {
        if (cur.data_at() > size) fail("chunk ends inside a block's length");
        const std::uint32_t len = codec::read_be32(chunk + cur.length_at());
        if (len > size - cur.data_at()) fail("a block's length reaches past the chunk (truncated chunk)");
        table.push_back({std::uint32_t(off + cur.data_at()), len, frame_word + std::uint32_t(cur.frame_offset() / 4),
                         std::uint32_t(cur.raw_bytes()), std::uint32_t(i), 0, 0, 0});
      }
      const std::size_t tail = g.tail_elems() * es;
      if (cur.length_at() + tail != size)
        fail(std::to_string(size) + " stored bytes, the framing accounts for " + std::to_string(cur.length_at() + tail));
      if (tail)
        table.push_back({std::uint32_t(off + cur.length_at()), std::uint32_t(tail),
                         frame_word + std::uint32_t((g.frame_elems - g.tail_elems()) * es / 4), std::uint32_t(tail),
                         std::uint32_t(i), 1, 0, 0});
    }
    input.upload(host.data(), (batch.buffer_bytes + 3) & ~std::uint64_t(3));
    blocks.upload(table.data(), table.size() * sizeof(Block));
    status.fill_zero();
    vk::Commands cmd;
    for (std::size_t k = 0; k < per_segment.size(); ++k) {
      const std::size_t first = per_segment[k].second;
      const std::size_t last = k + 1 < per_segment.size() ? per_segment[k + 1].second : table.size();
      // the blocks of this segment: descriptors [first, last) of the table
      const std::uint32_t push[3] = {std::uint32_t(last - first), std::uint32_t(es), std::uint32_t(first)};
      cmd.dispatch(pipe, {{&input}, {&blocks}, {resident->segments()[per_segment[k].first].buffer.get()}, {&status}},
                   push, sizeof push, last - first);
    }
    cmd.run();
    st.resize(batch.chunks);
    status.download(st.data(), st.size() * 4);
    for (std::size_t i = 0; i < batch.chunks; ++i)
      if (st[i]) rp.throw_decode_error(p, batch.first_chunk + i, status_text(st[i]));
    timing.decode += now_s() - t0;
    if (progress) progress(double(batch.out_row0 + batch.out_rows) / double(p.out_shape.scan_rows));
  }
  Provenance pv = rp.provenance(p, timing, "vulkan", plain ? "quantem-gpu Vulkan compute plain records"
                                                            : "quantem-gpu Vulkan compute bitshuffle+LZ4");
  pv.parameters["decode"] = std::string("compute shader (io/hdf5/vulkan/bitshuffle_lz4.comp: ") +
                            (plain ? "plain records" : "bitshuffle+LZ4") + ") into Vulkan device memory";
  pv.parameters["vulkan_device"] = vulkan_report().vulkan_name;
  return Dataset::from_vulkan(std::move(resident), load_metadata(p), std::move(pv));
}

}  // namespace qgpu::io
