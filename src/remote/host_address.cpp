#include "remote/host_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

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

}  // namespace qgpu::remote
