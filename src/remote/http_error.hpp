#pragma once
// Errors of the HTTP layer and the mapping of library errors to HTTP status codes.
#include <exception>
#include <string>

#include "core/error.hpp"

namespace qgpu::remote {

// An error with its HTTP status (404 unknown dataset or route, 400 bad request, 401 missing token, ...).
struct HttpError : Error {
  int status;
  HttpError(int status_code, const std::string& message) : Error(message), status(status_code) {}
};

struct StatusAndMessage {
  int status = 500;
  std::string message;
};

// HttpError -> its status; InvalidArgument / RegionError / DTypeError -> 400; IoError, cache::ProductUnavailable -> 404;
// BackendUnavailable and DeviceError (a GPU failure) -> 503; OutOfMemory (GPU or host) -> 507 Insufficient Storage,
// with the message naming the bytes; anything else (genuine internal failure) -> 500.
StatusAndMessage classify(std::exception_ptr e);

}  // namespace qgpu::remote
