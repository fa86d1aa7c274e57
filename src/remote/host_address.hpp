#pragma once
// The addresses a --host names, and whether they are loopback: checked on the parsed address, not the text.
// The Host/Origin rule of a service without a token (DNS rebinding, cross-origin pages): HostRule.
#include <optional>
#include <string>
#include <vector>

namespace qgpu::remote {

// True for an IPv4 address in 127.0.0.0/8, ::1, or an IPv4-mapped 127.x address (numeric text only).
bool is_loopback_address(const std::string& numeric);

// The numeric addresses of a host: itself when numeric ("[::1]" brackets dropped), else its name resolved
// (getaddrinfo). Empty when it does not resolve.
std::vector<std::string> resolve_host(const std::string& host);

// The host of a Host header value or an --allow-host name: "name", "name:port", "[v6]" or "[v6]:port" ->
// the name lower-cased without one trailing dot ("[::1]" keeps its brackets). nullopt when malformed (empty,
// a bare IPv6 address, a port that is not 1-5 digits, spaces or other characters no host name holds).
std::optional<std::string> host_of_header(const std::string& value);

// A loopback name as a browser sends it: "localhost", a literal IPv4 address in 127.0.0.0/8 (dotted quad, as
// browsers normalise it) or a bracketed IPv6 loopback ("[::1]", "[::ffff:127.0.0.1]"). Names that only
// start like one ("localhost.evil.com", "127.0.0.1.nip.io") are not: what they resolve to is up to their DNS.
bool is_loopback_name(const std::string& host);

// Which requests a service without a token answers (a page elsewhere must not read the user's data through
// DNS rebinding or a cross-origin request). With a token every request carries it and any Host is answered.
// Without one the service is bound to loopback and answers only requests whose Host names a loopback name
// (is_loopback_name), the name it was bound to, or an --allow-host name (any port), and whose Origin, when
// sent, names one of those too.
class HostRule {
 public:
  // InvalidArgument naming the --allow-host value that is not a host name.
  HostRule(bool token_required, const std::string& bind_host, const std::vector<std::string>& allowed);

  struct Refusal {
    int status;  // 421 (Host not served here) or 403 (cross-origin)
    std::string message;
  };
  // Empty when the request may proceed (to the token check where there is one).
  std::optional<Refusal> check(const std::string& host_header, const std::string& origin_header) const;
  bool allows(const std::string& host) const;  // host as host_of_header returns it

 private:
  bool token_required_;
  std::vector<std::string> names_;  // normalised: the bind host and the --allow-host names
};

}  // namespace qgpu::remote
