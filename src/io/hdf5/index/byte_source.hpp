#pragma once
// Where the bytes of an HDF5 file come from while its chunk index is parsed: the file itself (pread) or a memory
// buffer (tests, fuzzing). Every read is bound-checked against the source's size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::io::h5index {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  // Reads n bytes at offset; FormatError naming `what` when they lie (partly) beyond the end of the source.
  std::vector<std::uint8_t> read(std::uint64_t offset, std::uint64_t n, const char* what) const;
  // The same into a caller's buffer of at least n bytes (no allocation). Safe to call from several threads at once.
  void read_to(std::uint64_t offset, std::uint64_t n, std::uint8_t* dst, const char* what) const;
  // FormatError as read() names it when [offset, offset + n) lies (partly) beyond the end of the source (no size
  // limit: for a range read in pieces).
  void require_within(std::uint64_t offset, std::uint64_t n, const char* what) const;

 protected:
  virtual void read_into(std::uint64_t offset, void* dst, std::size_t n) const = 0;

 private:
  void check(std::uint64_t offset, std::uint64_t n, const char* what) const;  // FormatError as read() names
};

// pread on a file opened read-only; IoError when it cannot be opened.
class FileByteSource final : public ByteSource {
 public:
  explicit FileByteSource(const std::string& path);
  ~FileByteSource() override;
  FileByteSource(const FileByteSource&) = delete;
  FileByteSource& operator=(const FileByteSource&) = delete;
  std::uint64_t size() const override { return size_; }

 private:
  void read_into(std::uint64_t offset, void* dst, std::size_t n) const override;
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// A buffer owned by the caller (must outlive the source).
class MemoryByteSource final : public ByteSource {
 public:
  MemoryByteSource(const std::uint8_t* data, std::size_t n) : data_(data), n_(n) {}
  std::uint64_t size() const override { return n_; }

 private:
  void read_into(std::uint64_t offset, void* dst, std::size_t n) const override;
  const std::uint8_t* data_;
  std::size_t n_;
};

}  // namespace qgpu::io::h5index
