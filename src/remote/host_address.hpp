#pragma once
// The addresses a --host names, and whether they are loopback: checked on the parsed address, not the text.
#include <string>
#include <vector>

namespace qgpu::remote {

// True for an IPv4 address in 127.0.0.0/8, ::1, or an IPv4-mapped 127.x address (numeric text only).
bool is_loopback_address(const std::string& numeric);

// The numeric addresses of a host: itself when numeric ("[::1]" brackets dropped), else its name resolved
// (getaddrinfo). Empty when it does not resolve.
std::vector<std::string> resolve_host(const std::string& host);

}  // namespace qgpu::remote
