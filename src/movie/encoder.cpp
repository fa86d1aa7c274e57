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

std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot + 1);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

Container container_of(const std::string& path) {
  const std::string e = lower_extension(path);
  if (e == "mp4") return Container::mp4;
  if (e == "gif") return Container::gif;
  throw InvalidArgument("movie output '" + path + "': unknown extension (expected .mp4 or .gif)");
}

int nearest_palette_index(const display::Lut& pal, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  int best = 0;
  long best_d = -1;
  for (int i = 0; i < 256; ++i) {
    const long dr = long(pal[4 * i]) - r, dg = long(pal[4 * i + 1]) - g, db = long(pal[4 * i + 2]) - b;
    const long d = dr * dr + dg * dg + db * db;
    if (best_d < 0 || d < best_d) {
      best_d = d;
      best = i;
      if (d == 0) break;
    }
  }
  return best;
}

bool h264_nvenc_opens() {
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

struct Encoder::Impl {
  Container container = Container::mp4;
  std::string path, name;
  std::size_t in_rows = 0, in_cols = 0, rows = 0, cols = 0;
  display::Lut palette{};
  std::unordered_map<std::uint32_t, std::uint8_t> index_of;  // rgb -> palette index (memo)
  AVFormatContext* fmt = nullptr;
  AVCodecContext* ctx = nullptr;
  AVStream* st = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* pkt = nullptr;
  SwsContext* sws = nullptr;
  std::vector<std::uint8_t> padded;
  std::int64_t pts = 0;
  bool finished = false;

  ~Impl() {
    if (fmt && fmt->pb) avio_closep(&fmt->pb);
    avformat_free_context(fmt);
    avcodec_free_context(&ctx);
    av_frame_free(&frame);
    av_packet_free(&pkt);
    sws_freeContext(sws);
  }

  void send(AVFrame* f) {
    check(avcodec_send_frame(ctx, f), "sending a frame to " + name);
    for (;;) {
      const int ret = avcodec_receive_packet(ctx, pkt);
      if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
      check(ret, "receiving a packet from " + name);
      av_packet_rescale_ts(pkt, ctx->time_base, st->time_base);
      pkt->stream_index = st->index;
      check(av_interleaved_write_frame(fmt, pkt), "writing a packet to " + path);
    }
  }

  std::uint8_t index(const std::uint8_t* px) {
    const std::uint32_t key = std::uint32_t(px[0]) << 16 | std::uint32_t(px[1]) << 8 | px[2];
    auto it = index_of.find(key);
    if (it != index_of.end()) return it->second;
    const auto i = static_cast<std::uint8_t>(nearest_palette_index(palette, px[0], px[1], px[2]));
    index_of.emplace(key, i);
    return i;
  }
};

Encoder::Encoder(const std::string& path, std::size_t rows, std::size_t cols, unsigned fps,
                 const display::Lut& palette, const std::string& encoder)
    : p_(std::make_unique<Impl>()) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_FATAL); });  // failures surface as our typed errors
  Impl& p = *p_;
  p.container = container_of(path);
  p.path = path;
  p.palette = palette;
  if (rows == 0 || cols == 0 || rows > 16384 || cols > 16384)
    throw InvalidArgument("movie frame size " + std::to_string(cols) + "x" + std::to_string(rows) +
                          " is outside 1..16384");
  if (fps == 0 || fps > 60) throw InvalidArgument("movie fps must be 1..60");
  p.in_rows = rows;
  p.in_cols = cols;
  const bool mp4 = p.container == Container::mp4;
  p.rows = mp4 ? rows + rows % 2 : rows;
  p.cols = mp4 ? cols + cols % 2 : cols;
  if (mp4) {
    if (encoder == "auto") p.name = h264_nvenc_opens() ? "h264_nvenc" : "libx264";
    else if (encoder == "libx264" || encoder == "h264_nvenc") p.name = encoder;
    else throw InvalidArgument("mp4 encoder '" + encoder + "' unknown (expected auto, libx264 or h264_nvenc)");
  } else {
    if (encoder != "auto" && encoder != "gif")
      throw InvalidArgument("gif encoder '" + encoder + "' unknown (expected auto or gif)");
    p.name = "gif";
  }

  check(avformat_alloc_output_context2(&p.fmt, nullptr, mp4 ? "mp4" : "gif", path.c_str()),
        "creating the " + std::string(mp4 ? "mp4" : "gif") + " muxer");
  const bool global_header = (p.fmt->oformat->flags & AVFMT_GLOBALHEADER) != 0;
  std::string why;
  p.ctx = open_codec(p.name, int(p.cols), int(p.rows), fps, mp4 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_PAL8,
                     global_header, why);
  if (!p.ctx) throw BackendUnavailable("video encoder: " + why);
  p.st = avformat_new_stream(p.fmt, nullptr);
  if (!p.st) throw std::bad_alloc();
  check(avcodec_parameters_from_context(p.st->codecpar, p.ctx), "copying codec parameters");
  p.st->time_base = p.ctx->time_base;
  p.st->avg_frame_rate = p.ctx->framerate;
  check(avio_open(&p.fmt->pb, path.c_str(), AVIO_FLAG_WRITE), "opening '" + path + "' for writing");
  check(avformat_write_header(p.fmt, nullptr), "writing the header of " + path);

  p.frame = av_frame_alloc();
  p.pkt = av_packet_alloc();
  if (!p.frame || !p.pkt) throw std::bad_alloc();
  p.frame->format = p.ctx->pix_fmt;
  p.frame->width = p.ctx->width;
  p.frame->height = p.ctx->height;
  check(av_frame_get_buffer(p.frame, 0), "allocating a frame");
  if (mp4) {
    p.sws = sws_getContext(int(p.cols), int(p.rows), AV_PIX_FMT_RGBA, int(p.cols), int(p.rows), AV_PIX_FMT_YUV420P,
                           SWS_AREA | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, nullptr, nullptr, nullptr);
    if (!p.sws) throw IoError("video encoding: swscale has no RGBA -> yuv420p conversion");
    p.padded.resize(p.rows * p.cols * 4);
  }
}

Encoder::~Encoder() = default;

void Encoder::add(const display::Rgba& f) {
  Impl& p = *p_;
  if (p.finished) throw InvalidArgument("movie encoder: frame added after finish()");
  if (f.rows != p.in_rows || f.cols != p.in_cols || f.rgba.size() != f.rows * f.cols * 4)
    throw InvalidArgument("movie encoder: frame of " + std::to_string(f.cols) + "x" + std::to_string(f.rows) +
                          " in a movie of " + std::to_string(p.in_cols) + "x" + std::to_string(p.in_rows));
  check(av_frame_make_writable(p.frame), "making the frame writable");
  if (p.container == Container::mp4) {
    for (std::size_t r = 0; r < p.rows; ++r) {
      const std::size_t sr = std::min(r, p.in_rows - 1);
      std::uint8_t* dst = &p.padded[r * p.cols * 4];
      std::copy_n(&f.rgba[sr * p.in_cols * 4], p.in_cols * 4, dst);
      if (p.cols > p.in_cols) std::copy_n(dst + (p.in_cols - 1) * 4, 4, dst + p.in_cols * 4);
    }
    const std::uint8_t* src[1] = {p.padded.data()};
    const int stride[1] = {int(p.cols * 4)};
    sws_scale(p.sws, src, stride, 0, int(p.rows), p.frame->data, p.frame->linesize);
  } else {
    for (std::size_t r = 0; r < p.rows; ++r)
      for (std::size_t c = 0; c < p.cols; ++c)
        p.frame->data[0][r * p.frame->linesize[0] + c] = p.index(&f.rgba[(r * p.cols + c) * 4]);
    auto* pal = reinterpret_cast<std::uint32_t*>(p.frame->data[1]);
    for (int i = 0; i < 256; ++i)
      pal[i] = 0xff000000u | std::uint32_t(p.palette[4 * i]) << 16 | std::uint32_t(p.palette[4 * i + 1]) << 8 |
               p.palette[4 * i + 2];
  }
  p.frame->pts = p.pts++;
  p.send(p.frame);
}

void Encoder::finish() {
  Impl& p = *p_;
  if (p.finished) return;
  p.finished = true;
  p.send(nullptr);
  check(av_write_trailer(p.fmt), "writing the trailer of " + p.path);
  check(avio_closep(&p.fmt->pb), "closing " + p.path);
}

const std::string& Encoder::encoder_name() const { return p_->name; }
std::size_t Encoder::rows() const { return p_->rows; }
std::size_t Encoder::cols() const { return p_->cols; }

}  // namespace qgpu::movie
