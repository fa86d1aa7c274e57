#pragma once
// Query-parameter parsing with validation: every bad value raises HttpError 400 naming the parameter.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qgpu::remote {

using QueryParams = std::multimap<std::string, std::string>;  // the layout of httplib::Params

class Params {
 public:
  explicit Params(const QueryParams& q) : q_(q) {}

  bool has(const std::string& name) const { return q_.count(name) > 0; }
  std::optional<std::string> text(const std::string& name) const;
  // A finite number (rejects NaN, inf and trailing garbage).
  std::optional<double> number(const std::string& name) const;
  // A finite number >= 0.
  std::optional<double> non_negative(const std::string& name) const;
  double required_non_negative(const std::string& name) const;
  // A non-negative integer.
  std::optional<std::size_t> index(const std::string& name) const;
  std::size_t required_index(const std::string& name) const;
  // One of `choices`; `fallback` when absent.
  std::string choice(const std::string& name, const std::vector<std::string>& choices,
                     const std::string& fallback) const;

 private:
  const QueryParams& q_;
};

}  // namespace qgpu::remote
