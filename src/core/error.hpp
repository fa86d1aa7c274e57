#pragma once
// Error types of the public API. Every failure a user can provoke surfaces as one of these,
// with a message naming the problem (file, dataset path, chunk, region, dtype or backend).
#include <stdexcept>
#include <string>

namespace qgpu {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The file or dataset cannot be opened or found.
struct IoError : Error {
  using Error::Error;
};
// The file exists but its content is malformed (corrupt or truncated chunk, unexpected layout).
struct FormatError : Error {
  using Error::Error;
};
// A region or bin does not fit the data.
struct RegionError : Error {
  using Error::Error;
};
// The data type is not one quantem-gpu handles.
struct DTypeError : Error {
  using Error::Error;
};
// The requested backend cannot be used on this machine.
struct BackendUnavailable : Error {
  using Error::Error;
};
// Any other argument that makes no sense (negative radius, empty mask, ...).
struct InvalidArgument : Error {
  using Error::Error;
};
// The GPU failed while running (a CUDA or cuFFT call returned an error): the message names the call.
struct DeviceError : Error {
  using Error::Error;
};
// Memory could not be allocated (GPU or pinned host): the message names the bytes asked for and those free.
struct OutOfMemory : DeviceError {
  using DeviceError::DeviceError;
};

}  // namespace qgpu
