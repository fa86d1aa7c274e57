#include "remote/host_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/error.hpp"
#include "remote/server.hpp"

namespace qgpu::remote {

namespace {

std::string unbracketed(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
  return host;
}

}  // namespace

bool is_loopback_address(const std::string& numeric) {
  in_addr v4{};
  if (::inet_pton(AF_INET, numeric.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, numeric.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::vector<std::string> resolve_host(const std::string& host) {
  const std::string h = unbracketed(host);
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, h.c_str(), &v6) == 1) return {h};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (h.empty() || ::getaddrinfo(h.c_str(), nullptr, &hints, &list) != 0) return {};
  std::vector<std::string> out;
  for (const addrinfo* a = list; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {0};
    const void* src = a->ai_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && ::inet_ntop(a->ai_family, src, text, sizeof(text)))
      out.emplace_back(text);
  }
  ::freeaddrinfo(list);
  return out;
}

// Loopback only when the host resolves, and every address it resolves to is loopback (the bind uses one of them).
bool is_loopback_host(const std::string& host) {
  const std::vector<std::string> addresses = resolve_host(host);
  if (addresses.empty()) return false;
  for (const std::string& a : addresses)
    if (!is_loopback_address(a)) return false;
  return true;
}

std::optional<std::string> host_of_header(const std::string& value) {
  if (value.empty() || value.size() > 255 + 8) return std::nullopt;
  std::string name, port;
  if (value.front() == '[') {
    const std::size_t close = value.find(']');
    if (close == std::string::npos) return std::nullopt;
    name = value.substr(0, close + 1);
    const std::string rest = value.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return std::nullopt;
      port = rest.substr(1);
      if (port.empty()) return std::nullopt;
    }
    in6_addr v6{};
    if (::inet_pton(AF_INET6, name.substr(1, name.size() - 2).c_str(), &v6) != 1) return std::nullopt;
  } else {
    const std::size_t colon = value.find(':');
    if (colon != std::string::npos && value.find(':', colon + 1) != std::string::npos) return std::nullopt;
    name = value.substr(0, colon);
    if (colon != std::string::npos) {
      port = value.substr(colon + 1);
      if (port.empty()) return std::nullopt;
    }
    if (name.empty()) return std::nullopt;
    for (const char ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '_') return std::nullopt;
    if (name.size() > 1 && name.back() == '.') name.pop_back();
    if (name == ".") return std::nullopt;
  }
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return name;
}

bool is_loopback_name(const std::string& host) {
  if (host == "localhost") return true;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    const std::string inner = host.substr(1, host.size() - 2);
    in6_addr v6{};
    return ::inet_pton(AF_INET6, inner.c_str(), &v6) == 1 && is_loopback_address(inner);
  }
  in_addr v4{};  // inet_pton takes only the dotted quad: "127.1" or "0x7f.0.0.1" are not literals here
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && is_loopback_address(host);
}

HostRule::HostRule(bool token_required, const std::string& bind_host, const std::vector<std::string>& allowed)
    : token_required_(token_required) {
  for (const std::string& a : allowed) {
    const std::optional<std::string> h = host_of_header(a);
    if (!h) throw InvalidArgument("--allow-host: '" + a + "' is not a host name (NAME, NAME:PORT or [IPv6])");
    names_.push_back(*h);
  }
  // The name the service was started with (it prints http://HOST:PORT/): a bare IPv6 --host is bracketed.
  in6_addr v6{};
  const std::string bracketed = ::inet_pton(AF_INET6, bind_host.c_str(), &v6) == 1 ? "[" + bind_host + "]" : bind_host;
  if (const std::optional<std::string> h = host_of_header(bracketed)) names_.push_back(*h);
}

bool HostRule::allows(const std::string& host) const {
  return is_loopback_name(host) || std::find(names_.begin(), names_.end(), host) != names_.end();
}

std::optional<HostRule::Refusal> HostRule::check(const std::string& host_header,
                                                 const std::string& origin_header) const {
  if (token_required_) return std::nullopt;  // the token guards every request; any Host may carry it
  const std::string how = "this service (loopback, no --token) answers only loopback names (localhost, "
                          "127.0.0.1, [::1]) and the names given with --allow-host NAME";
  if (host_header.empty()) return Refusal{421, "the request has no Host header: " + how};
  const std::optional<std::string> host = host_of_header(host_header);
  if (!host) return Refusal{421, "the request's Host header '" + host_header + "' is not a host name: " + how};
  if (!allows(*host))
    return Refusal{421, "Host '" + *host + "' is not served here: " + how +
                            " (start it with --allow-host " + *host + " to answer that name, or use --token)"};
  if (origin_header.empty()) return std::nullopt;  // not a cross-origin browser request
  const std::size_t scheme = origin_header.find("://");
  const std::optional<std::string> origin =
      scheme == std::string::npos ? std::nullopt : host_of_header(origin_header.substr(scheme + 3));
  if (!origin || !allows(*origin))
    return Refusal{403, "cross-origin request from '" + origin_header + "' refused: " + how +
                            " (a page of another site may not use it; use --token)"};
  return std::nullopt;
}

}  // namespace qgpu::remote
