#include "remote/http_error.hpp"

#include <new>

#include "cache/cache.hpp"

namespace qgpu::remote {

StatusAndMessage classify(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const HttpError& x) {
    return {x.status, x.what()};
  } catch (const cache::ProductUnavailable& x) {
    return {404, x.what()};
  } catch (const InvalidArgument& x) {
    return {400, x.what()};
  } catch (const RegionError& x) {
    return {400, x.what()};
  } catch (const DTypeError& x) {
    return {400, x.what()};
  } catch (const IoError& x) {
    return {404, x.what()};
  } catch (const BackendUnavailable& x) {
    return {503, x.what()};
  } catch (const OutOfMemory& x) {
    return {507, x.what()};
  } catch (const DeviceError& x) {
    return {503, x.what()};
  } catch (const std::bad_alloc&) {
    return {507, "out of host memory"};
  } catch (const std::exception& x) {
    return {500, std::string("internal error: ") + x.what()};
  } catch (...) {
    return {500, "internal error: unknown exception"};
  }
}

}  // namespace qgpu::remote
