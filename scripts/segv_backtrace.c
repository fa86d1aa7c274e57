// A preloadable SIGSEGV/SIGABRT handler that prints the native stack (glibc backtrace) with each frame's object and
// offset, for crashes on a machine without gdb. usage: cc -shared -fPIC -O1 -o segv.so segv_backtrace.c &&
// LD_PRELOAD=$PWD/segv.so python3 ...; then addr2line -f -C -e OBJECT OFFSET for each frame.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_fatal(int sig, siginfo_t* info, void* ctx) {
  (void)ctx;
  void* frames[64];
  int n = backtrace(frames, 64);
  char line[512];
  int len = snprintf(line, sizeof line, "\n=== signal %d at address %p: native stack (object offset symbol)\n", sig,
                     info ? info->si_addr : 0);
  write(2, line, len);
  for (int i = 0; i < n; ++i) {
    Dl_info d;
    if (dladdr(frames[i], &d) && d.dli_fname) {
      len = snprintf(line, sizeof line, "FRAME %s 0x%lx %s\n", d.dli_fname,
                     (unsigned long)((char*)frames[i] - (char*)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
    } else {
      len = snprintf(line, sizeof line, "FRAME ? %p ?\n", frames[i]);
    }
    write(2, line, len);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  sigaction(SIGABRT, &sa, 0);
}
