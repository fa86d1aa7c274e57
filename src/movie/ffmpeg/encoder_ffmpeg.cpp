// The FFmpeg half of movie encoding, built as the plugin libquantem_gpu_movie.so (see movie/encoder.hpp): the
// encoder behind open_encoder(), which has already checked the size, fps and encoder name.
#include "movie/encoder.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cctype>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::movie {

namespace {

std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

void check(int code, const std::string& what) {
  if (code < 0) throw IoError("video encoding: " + what + " failed: " + av_error(code));
}

// An opened codec context, or null with the reason.
AVCodecContext* open_codec(const std::string& name, int cols, int rows, unsigned fps, AVPixelFormat pix,
                           bool global_header, std::string& why) {
  const AVCodec* codec = avcodec_find_encoder_by_name(name.c_str());
  if (!codec) {
    why = "libavcodec has no encoder '" + name + "'";
    return nullptr;
  }
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  if (!ctx) throw std::bad_alloc();
  ctx->width = cols;
  ctx->height = rows;
  ctx->pix_fmt = pix;
  ctx->time_base = AVRational{1, static_cast<int>(fps)};
  ctx->framerate = AVRational{static_cast<int>(fps), 1};
  if (pix == AV_PIX_FMT_YUV420P) {
    ctx->gop_size = static_cast<int>(fps) * 2;
    ctx->color_range = AVCOL_RANGE_MPEG;  // swscale's RGB -> YUV default: limited range, BT.601
    ctx->colorspace = AVCOL_SPC_SMPTE170M;
    ctx->color_primaries = AVCOL_PRI_SMPTE170M;
    ctx->color_trc = AVCOL_TRC_SMPTE170M;
    if (name == "libx264") {
      av_opt_set(ctx->priv_data, "preset", "medium", 0);
      av_opt_set(ctx->priv_data, "crf", "18", 0);
    }
  }
  if (global_header) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  const int ret = avcodec_open2(ctx, codec, nullptr);
  if (ret < 0) {
    why = "encoder '" + name + "' does not open here: " + av_error(ret);
    avcodec_free_context(&ctx);
    return nullptr;
  }
  return ctx;
}

bool nvenc_opens() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
    const int level = av_log_get_level();
    av_log_set_level(AV_LOG_QUIET);  // a failed trial open logs errors we do not want to show
    std::string why;
    AVCodecContext* ctx = open_codec("h264_nvenc", 256, 256, 10, AV_PIX_FMT_YUV420P, false, why);
    av_log_set_level(level);
    ok = ctx != nullptr;
    avcodec_free_context(&ctx);
  });
  return ok;
}

class FfmpegEncoder final : public Encoder {
 public:
  FfmpegEncoder(const std::string& path, Container container, std::size_t rows, std::size_t cols, unsigned fps,
                const display::Lut& palette, const std::string& name);
  ~FfmpegEncoder() override;
  void add(const display::Rgba& frame) override;
  void finish() override;
  const std::string& encoder_name() const override { return name_; }
  std::size_t rows() const override { return rows_; }
  std::size_t cols() const override { return cols_; }

 private:
  void send(AVFrame* f);
  void release();
  std::uint8_t index(const std::uint8_t* px);

  Container container_ = Container::mp4;
  std::string path_, name_;
  std::size_t in_rows_ = 0, in_cols_ = 0, rows_ = 0, cols_ = 0;
  display::Lut palette_{};
  std::unordered_map<std::uint32_t, std::uint8_t> index_of_;  // rgb -> palette index (memo)
  AVFormatContext* fmt_ = nullptr;
  AVCodecContext* ctx_ = nullptr;
  AVStream* st_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* pkt_ = nullptr;
  SwsContext* sws_ = nullptr;
  std::vector<std::uint8_t> padded_;
  std::int64_t pts_ = 0;
  bool finished_ = false;
};

FfmpegEncoder::FfmpegEncoder(const std::string& path, Container container, std::size_t rows, std::size_t cols,
                             unsigned fps, const display::Lut& palette, const std::string& name)
    : container_(container), path_(path), name_(name), in_rows_(rows), in_cols_(cols), palette_(palette) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_FATAL); });  // failures surface as our typed errors
  const bool mp4 = container_ == Container::mp4;
  rows_ = mp4 ? rows + rows % 2 : rows;
  cols_ = mp4 ? cols + cols % 2 : cols;
  try {
    check(avformat_alloc_output_context2(&fmt_, nullptr, mp4 ? "mp4" : "gif", path.c_str()),
          "creating the " + std::string(mp4 ? "mp4" : "gif") + " muxer");
    const bool global_header = (fmt_->oformat->flags & AVFMT_GLOBALHEADER) != 0;
    std::string why;
    ctx_ = open_codec(name_, int(cols_), int(rows_), fps, mp4 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_PAL8, global_header,
                      why);
    if (!ctx_) throw BackendUnavailable("video encoder: " + why);
    st_ = avformat_new_stream(fmt_, nullptr);
    if (!st_) throw std::bad_alloc();
    check(avcodec_parameters_from_context(st_->codecpar, ctx_), "copying codec parameters");
    st_->time_base = ctx_->time_base;
    st_->avg_frame_rate = ctx_->framerate;
    check(avio_open(&fmt_->pb, path.c_str(), AVIO_FLAG_WRITE), "opening '" + path + "' for writing");
    check(avformat_write_header(fmt_, nullptr), "writing the header of " + path);

    frame_ = av_frame_alloc();
    pkt_ = av_packet_alloc();
    if (!frame_ || !pkt_) throw std::bad_alloc();
    frame_->format = ctx_->pix_fmt;
    frame_->width = ctx_->width;
    frame_->height = ctx_->height;
    check(av_frame_get_buffer(frame_, 0), "allocating a frame");
    if (mp4) {
      sws_ = sws_getContext(int(cols_), int(rows_), AV_PIX_FMT_RGBA, int(cols_), int(rows_), AV_PIX_FMT_YUV420P,
                            SWS_AREA | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, nullptr, nullptr, nullptr);
      if (!sws_) throw IoError("video encoding: swscale has no RGBA -> yuv420p conversion");
      padded_.resize(rows_ * cols_ * 4);
    }
  } catch (...) {
    release();  // a throwing constructor runs no destructor: free what was opened
    throw;
  }
}

FfmpegEncoder::~FfmpegEncoder() { release(); }

void FfmpegEncoder::release() {
  if (fmt_ && fmt_->pb) avio_closep(&fmt_->pb);
  avformat_free_context(fmt_);
  fmt_ = nullptr;
  avcodec_free_context(&ctx_);
  av_frame_free(&frame_);
  av_packet_free(&pkt_);
  sws_freeContext(sws_);
  sws_ = nullptr;
}

void FfmpegEncoder::send(AVFrame* f) {
  check(avcodec_send_frame(ctx_, f), "sending a frame to " + name_);
  for (;;) {
    const int ret = avcodec_receive_packet(ctx_, pkt_);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    check(ret, "receiving a packet from " + name_);
    av_packet_rescale_ts(pkt_, ctx_->time_base, st_->time_base);
    pkt_->stream_index = st_->index;
    check(av_interleaved_write_frame(fmt_, pkt_), "writing a packet to " + path_);
  }
}

std::uint8_t FfmpegEncoder::index(const std::uint8_t* px) {
  const std::uint32_t key = std::uint32_t(px[0]) << 16 | std::uint32_t(px[1]) << 8 | px[2];
  auto it = index_of_.find(key);
  if (it != index_of_.end()) return it->second;
  const auto i = static_cast<std::uint8_t>(nearest_palette_index(palette_, px[0], px[1], px[2]));
  index_of_.emplace(key, i);
  return i;
}

void FfmpegEncoder::add(const display::Rgba& f) {
  if (finished_) throw InvalidArgument("movie encoder: frame added after finish()");
  if (f.rows != in_rows_ || f.cols != in_cols_ || f.rgba.size() != f.rows * f.cols * 4)
    throw InvalidArgument("movie encoder: frame of " + std::to_string(f.cols) + "x" + std::to_string(f.rows) +
                          " in a movie of " + std::to_string(in_cols_) + "x" + std::to_string(in_rows_));
  check(av_frame_make_writable(frame_), "making the frame writable");
  if (container_ == Container::mp4) {
    for (std::size_t r = 0; r < rows_; ++r) {
      const std::size_t sr = std::min(r, in_rows_ - 1);
      std::uint8_t* dst = &padded_[r * cols_ * 4];
      std::copy_n(&f.rgba[sr * in_cols_ * 4], in_cols_ * 4, dst);
      if (cols_ > in_cols_) std::copy_n(dst + (in_cols_ - 1) * 4, 4, dst + in_cols_ * 4);
    }
    const std::uint8_t* src[1] = {padded_.data()};
    const int stride[1] = {int(cols_ * 4)};
    sws_scale(sws_, src, stride, 0, int(rows_), frame_->data, frame_->linesize);
  } else {
    for (std::size_t r = 0; r < rows_; ++r)
      for (std::size_t c = 0; c < cols_; ++c)
        frame_->data[0][r * frame_->linesize[0] + c] = index(&f.rgba[(r * cols_ + c) * 4]);
    auto* pal = reinterpret_cast<std::uint32_t*>(frame_->data[1]);
    for (int i = 0; i < 256; ++i)
      pal[i] = 0xff000000u | std::uint32_t(palette_[4 * i]) << 16 | std::uint32_t(palette_[4 * i + 1]) << 8 |
               palette_[4 * i + 2];
  }
  frame_->pts = pts_++;
  send(frame_);
}

void FfmpegEncoder::finish() {
  if (finished_) return;
  finished_ = true;
  send(nullptr);
  check(av_write_trailer(fmt_), "writing the trailer of " + path_);
  check(avio_closep(&fmt_->pb), "closing " + path_);
}

std::unique_ptr<Encoder> open(const std::string& path, Container container, std::size_t rows, std::size_t cols,
                              unsigned fps, const display::Lut& palette, const std::string& name) {
  return std::make_unique<FfmpegEncoder>(path, container, rows, cols, fps, palette, name);
}

const detail::Plugin kPlugin{detail::kPluginAbi, &open, &nvenc_opens};

}  // namespace

}  // namespace qgpu::movie

extern "C" __attribute__((visibility("default"))) const qgpu::movie::detail::Plugin* qgpu_movie_plugin() {
  return &qgpu::movie::kPlugin;
}
