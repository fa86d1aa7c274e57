#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "io/hdf5/chunk_index.hpp"
#include "io/hdf5/cuda/bin_frames.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"
#include "io/hdf5/cuda/load_cuda.hpp"
#include "io/hdf5/load_provenance.hpp"

namespace qgpu::io {

namespace {

constexpr std::size_t kStagingBytes = std::size_t(2) << 30;

struct Pinned {
  void* p = nullptr;
  explicit Pinned(std::size_t bytes) { QGPU_CUDA(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1))); }
  ~Pinned() { cudaFreeHost(p); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  template <class T> T* as() { return static_cast<T*>(p); }
};

}  // namespace

Dataset load_cuda(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  const std::string where = "'" + fi.dataset_path + "' in '" + fi.path + "'";
  if (!fi.bitshuffle_lz4)
    throw FormatError("GPU decode handles bitshuffle+LZ4 (HDF5 filter 32008) chunks; " + where +
                      " uses another storage (filters: " + std::to_string(fi.filters.size()) +
                      "); load it with backend='cpu'");
  const std::size_t es = dtype_size(fi.dtype);
  cuda::DecodeGeometry geo{es, fi.shape.frame_pixels(), fi.bitshuffle_block_elems};
  if (geo.block_elems % 8 || geo.block_elems * es > 16384)
    throw FormatError(where + " uses bitshuffle block size " + std::to_string(geo.block_elems) +
                      " elements; the GPU decoder handles multiples of 8 up to 16 KiB per block");

  // Frames in load order: scan region rows, then columns.
  std::vector<std::uint64_t> frames;
  frames.reserve(p.scan.rows * p.scan.cols);
  for (std::size_t r = p.scan.row0; r < p.scan.row0 + p.scan.rows; ++r)
    for (std::size_t c = p.scan.col0; c < p.scan.col0 + p.scan.cols; ++c) frames.push_back(r * fi.shape.scan_cols + c);
  auto clock = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  const double t_start = clock();
  const ChunkReader reader(fi);
  std::vector<std::uint64_t> chunk_bytes(frames.size());  // stored (compressed) size of each frame's chunk
  for (std::size_t i = 0; i < frames.size(); ++i) chunk_bytes[i] = reader.size(frames[i]);
  const double t_located = clock();
  double t_reading = 0;

  const bool direct = p.full_frames() && !p.binned();
  const std::size_t frames_per_out_row = p.bin_scan * p.scan.cols;
  const std::size_t out_rows_total = p.out_shape.scan_rows;
  // Batches hold whole output scan rows; sized by compressed bytes and, when staging, decoded bytes.
  std::vector<std::size_t> batch_rows;  // output rows per batch
  {
    std::size_t row = 0;
    while (row < out_rows_total) {
      std::size_t rows = 0, bytes = 0;
      while (row + rows < out_rows_total) {
        std::size_t rb = 0;
        for (std::size_t k = 0; k < frames_per_out_row; ++k) rb += chunk_bytes[(row + rows) * frames_per_out_row + k];
        const std::size_t staged = (rows + 1) * frames_per_out_row * fi.frame_bytes();
        if (rows > 0 && (bytes + rb > p.batch_bytes || (!direct && staged > kStagingBytes))) break;
        bytes += rb;
        ++rows;
      }
      batch_rows.push_back(rows);
      row += rows;
    }
  }
  // Offsets of each chunk inside its batch buffer, and the largest batch.
  std::vector<std::uint64_t> dst_off(chunk_bytes.size());
  std::size_t max_batch_bytes = 0, max_batch_chunks = 0;
  {
    std::size_t row = 0;
    for (std::size_t rows : batch_rows) {
      const std::size_t first = row * frames_per_out_row, last = (row + rows) * frames_per_out_row;
      std::uint64_t off = 0;
      for (std::size_t i = first; i < last; ++i) {
        dst_off[i] = off;
        off += chunk_bytes[i];
      }
      max_batch_bytes = std::max<std::size_t>(max_batch_bytes, off);
      max_batch_chunks = std::max(max_batch_chunks, last - first);
      row += rows;
    }
  }

  const std::size_t out_bytes = p.out_shape.nbytes(dtype_size(p.out_dtype));
  auto result = std::make_shared<DeviceBuffer>(out_bytes);
  DeviceBuffer staging(direct ? 0 : max_batch_chunks * fi.frame_bytes());
  const std::size_t mb = geo.max_blocks();
  DeviceBuffer block_src(max_batch_chunks * mb * sizeof(std::uint64_t));
  DeviceBuffer block_len(max_batch_chunks * mb * sizeof(std::uint32_t));
  DeviceBuffer flags(sizeof(unsigned long long) + sizeof(int));
  const unsigned long long no_error = ~0ull;
  const int no_overflow = 0;
  flags.upload(&no_error, sizeof(no_error));
  flags.upload(&no_overflow, sizeof(no_overflow), sizeof(no_error));
  auto* d_error = flags.as<unsigned long long>();
  int* d_overflow = reinterpret_cast<int*>(flags.as<char>() + sizeof(unsigned long long));

  // Two slots: the host reads batch b+1 while the GPU decodes batch b.
  const std::size_t table_bytes = 3 * max_batch_chunks * sizeof(std::uint64_t);
  Pinned pin_data[2] = {Pinned(max_batch_bytes), Pinned(max_batch_bytes)};
  Pinned pin_table[2] = {Pinned(table_bytes), Pinned(table_bytes)};
  DeviceBuffer dev_data[2] = {DeviceBuffer(max_batch_bytes), DeviceBuffer(max_batch_bytes)};
  DeviceBuffer dev_table[2] = {DeviceBuffer(table_bytes), DeviceBuffer(table_bytes)};
  cudaStream_t stream;
  QGPU_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t done[2];
  for (auto& e : done) QGPU_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  struct Cleanup {
    cudaStream_t s;
    cudaEvent_t* e;
    ~Cleanup() {
      cudaStreamSynchronize(s);
      cudaEventDestroy(e[0]);
      cudaEventDestroy(e[1]);
      cudaStreamDestroy(s);
    }
  } cleanup{stream, done};

  std::size_t row = 0;
  for (std::size_t b = 0; b < batch_rows.size(); ++b) {
    const int slot = int(b % 2);
    QGPU_CUDA(cudaEventSynchronize(done[slot]));  // batch b-2 finished with this slot
    const std::size_t first = row * frames_per_out_row, last = (row + batch_rows[b]) * frames_per_out_row;
    const std::size_t n = last - first;
    const double t_read0 = clock();
    for (std::size_t i = first; i < last; ++i) reader.read(frames[i], pin_data[slot].as<std::uint8_t>() + dst_off[i]);
    t_reading += clock() - t_read0;
    std::uint64_t* tab = pin_table[slot].as<std::uint64_t>();
    for (std::size_t i = 0; i < n; ++i) {
      tab[i] = dst_off[first + i];
      tab[max_batch_chunks + i] = chunk_bytes[first + i];
      tab[2 * max_batch_chunks + i] = direct ? first + i : i;
    }
    const std::size_t batch_bytes = dst_off[last - 1] + chunk_bytes[last - 1];
    QGPU_CUDA(cudaMemcpyAsync(dev_data[slot].data(), pin_data[slot].p, batch_bytes, cudaMemcpyHostToDevice, stream));
    QGPU_CUDA(cudaMemcpyAsync(dev_table[slot].data(), pin_table[slot].p, table_bytes, cudaMemcpyHostToDevice, stream));
    const auto* dtab = dev_table[slot].as<std::uint64_t>();
    cuda::DecodeBatch batch{dev_data[slot].as<std::uint8_t>(), dtab, dtab + max_batch_chunks,
                            dtab + 2 * max_batch_chunks, n, first};
    cuda::DecodeScratch scratch{block_src.as<std::uint64_t>(), block_len.as<std::uint32_t>(), max_batch_chunks * mb};
    cuda::decode_bitshuffle_lz4(batch, geo, direct ? result->data() : staging.data(), scratch, d_error, stream);
    if (!direct) {
      cuda::BinGeometry bg{p.scan.cols,       fi.shape.det_rows,     fi.shape.det_cols,    p.detector.row0,
                           p.detector.col0,   batch_rows[b],         p.out_shape.scan_cols, p.out_shape.det_rows,
                           p.out_shape.det_cols, p.bin_scan,         p.bin_detector};
      const std::size_t out_off = row * p.out_shape.scan_cols * p.out_shape.frame_pixels() * dtype_size(p.out_dtype);
      cuda::bin_frames(staging.data(), fi.dtype, result->as<char>() + out_off, p.out_dtype, bg, d_overflow, stream);
    }
    QGPU_CUDA(cudaEventRecord(done[slot], stream));
    row += batch_rows[b];
    if (progress) progress(double(row) / double(out_rows_total));
  }
  const double t_queued = clock();
  QGPU_CUDA(cudaStreamSynchronize(stream));
  const double t_done = clock();
  unsigned long long err = 0;
  int overflow = 0;
  flags.download(&err, sizeof(err));
  flags.download(&overflow, sizeof(overflow), sizeof(err));
  if (err != no_error) {
    // Chunk ids count frames in load order; name the stored frame.
    const unsigned long long id = err >> 8;
    throw FormatError("cannot decode " + where + ", frame " + std::to_string(frames[id]) + " (" +
                      cuda::describe_decode_error(err) + ")");
  }
  if (overflow) throw FormatError("binned counts of " + where + " overflow uint32");
  Provenance pv = load_provenance(p, "cuda", "quantem-gpu CUDA bitshuffle+LZ4");
  pv.parameters["timing_s"] = {{"size_chunks", t_located - t_start},
                               {"read_chunks", t_reading},
                               {"final_gpu_wait", t_done - t_queued},
                               {"total", t_done - t_start},
                               {"batches", batch_rows.size()}};
  return Dataset::from_device(result, p.out_shape, p.out_dtype, load_metadata(p), std::move(pv));
}

}  // namespace qgpu::io
