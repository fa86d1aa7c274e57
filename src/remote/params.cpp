#include "remote/params.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "remote/http_error.hpp"

namespace qgpu::remote {

namespace {

[[noreturn]] void bad(const std::string& name, const std::string& what, const std::string& got) {
  throw HttpError(400, "parameter '" + name + "' must be " + what + ", got '" + got + "'");
}

}  // namespace

std::optional<std::string> Params::text(const std::string& name) const {
  auto it = q_.find(name);
  if (it == q_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> Params::number(const std::string& name) const {
  const auto t = text(name);
  if (!t) return std::nullopt;
  const char* begin = t->c_str();
  char* end = nullptr;
  const double v = t->empty() ? 0.0 : std::strtod(begin, &end);
  if (t->empty() || end != begin + t->size() || !std::isfinite(v)) bad(name, "a finite number", *t);
  return v;
}

std::optional<double> Params::non_negative(const std::string& name) const {
  const auto v = number(name);
  if (v && *v < 0) bad(name, "a number >= 0", *text(name));
  return v;
}

double Params::required_non_negative(const std::string& name) const {
  const auto v = non_negative(name);
  if (!v) throw HttpError(400, "parameter '" + name + "' is required");
  return *v;
}

std::optional<std::size_t> Params::index(const std::string& name) const {
  const auto t = text(name);
  if (!t) return std::nullopt;
  std::size_t v = 0;
  const auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  if (t->empty() || ec != std::errc() || p != t->data() + t->size()) bad(name, "a non-negative integer", *t);
  return v;
}

std::size_t Params::required_index(const std::string& name) const {
  const auto v = index(name);
  if (!v) throw HttpError(400, "parameter '" + name + "' is required");
  return *v;
}

std::string Params::choice(const std::string& name, const std::vector<std::string>& choices,
                           const std::string& fallback) const {
  const auto t = text(name);
  if (!t) return fallback;
  for (const auto& c : choices)
    if (*t == c) return c;
  std::string list;
  for (const auto& c : choices) {
    if (!list.empty()) list += ", ";
    list += c;
  }
  bad(name, "one of " + list, *t);
}

}  // namespace qgpu::remote
