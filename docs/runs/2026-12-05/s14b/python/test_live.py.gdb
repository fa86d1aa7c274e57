[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
[Detaching after vfork from child process 7375]
[Detaching after vfork from child process 7376]
[Detaching after vfork from child process 7377]
[Detaching after vfork from child process 7378]
[Detaching after vfork from child process 7381]
[Detaching after vfork from child process 7382]
[Detaching after vfork from child process 7383]
[New Thread 0x7fffd29ff6c0 (LWP 7384)]
[New Thread 0x7fffd21fe6c0 (LWP 7385)]
[New Thread 0x7fffd19fd6c0 (LWP 7386)]
[New Thread 0x7fffd11fc6c0 (LWP 7387)]
[New Thread 0x7fffd09fb6c0 (LWP 7388)]
[New Thread 0x7fffd01fa6c0 (LWP 7389)]
[New Thread 0x7fffcf9f96c0 (LWP 7390)]
[New Thread 0x7fffcf1f86c0 (LWP 7391)]
[New Thread 0x7fffce9f76c0 (LWP 7392)]
[New Thread 0x7fffce1f66c0 (LWP 7393)]
[New Thread 0x7fffcd9f56c0 (LWP 7394)]
[New Thread 0x7fffcd1f46c0 (LWP 7395)]
[New Thread 0x7fffcc9f36c0 (LWP 7396)]
[New Thread 0x7fffcc1f26c0 (LWP 7397)]
[New Thread 0x7fffcb9f16c0 (LWP 7398)]
[New Thread 0x7fffb13b36c0 (LWP 7400)]
[New Thread 0x7fffabfff6c0 (LWP 7401)]
[Thread 0x7fffcb9f16c0 (LWP 7398) exited]
[Thread 0x7fffcc1f26c0 (LWP 7397) exited]
[Thread 0x7fffcc9f36c0 (LWP 7396) exited]
[Thread 0x7fffcd1f46c0 (LWP 7395) exited]
[Thread 0x7fffcd9f56c0 (LWP 7394) exited]
[Thread 0x7fffce1f66c0 (LWP 7393) exited]
[Thread 0x7fffce9f76c0 (LWP 7392) exited]
[Thread 0x7fffcf1f86c0 (LWP 7391) exited]
[Thread 0x7fffcf9f96c0 (LWP 7390) exited]
[Thread 0x7fffd01fa6c0 (LWP 7389) exited]
[Thread 0x7fffd09fb6c0 (LWP 7388) exited]
[Thread 0x7fffd11fc6c0 (LWP 7387) exited]
[Thread 0x7fffd19fd6c0 (LWP 7386) exited]
[Thread 0x7fffd21fe6c0 (LWP 7385) exited]
[Thread 0x7fffd29ff6c0 (LWP 7384) exited]
[Detaching after fork from child process 7402]
[New Thread 0x7fffcb9f16c0 (LWP 7413)]
[Detaching after vfork from child process 7414]
[New Thread 0x7fffcc1f26c0 (LWP 7415)]
[New Thread 0x7fffcc9f36c0 (LWP 7416)]
[New Thread 0x7fffcd1f46c0 (LWP 7417)]
[New Thread 0x7fffcfcd86c0 (LWP 7418)]
[New Thread 0x7fffcf4d76c0 (LWP 7419)]
[New Thread 0x7fffcecd66c0 (LWP 7420)]
[Thread 0x7fffcc9f36c0 (LWP 7416) exited]
[New Thread 0x7fffce4d56c0 (LWP 7421)]
[Thread 0x7fffcd1f46c0 (LWP 7417) exited]
[New Thread 0x7fffcdcd46c0 (LWP 7422)]
[New Thread 0x7fffab7fe6c0 (LWP 7423)]
[Thread 0x7fffcecd66c0 (LWP 7420) exited]
[Thread 0x7fffcf4d76c0 (LWP 7419) exited]
[Thread 0x7fffcfcd86c0 (LWP 7418) exited]
[Thread 0x7fffce4d56c0 (LWP 7421) exited]
[New Thread 0x7fffaaffd6c0 (LWP 7424)]
[Thread 0x7fffcdcd46c0 (LWP 7422) exited]
[New Thread 0x7fffaa7fc6c0 (LWP 7425)]
[New Thread 0x7fffa9ffb6c0 (LWP 7426)]
[New Thread 0x7fffa97fa6c0 (LWP 7427)]
[Thread 0x7fffab7fe6c0 (LWP 7423) exited]
[New Thread 0x7fffa8ff96c0 (LWP 7428)]
[New Thread 0x7ffd9dfff6c0 (LWP 7429)]
[Thread 0x7fffaaffd6c0 (LWP 7424) exited]
[New Thread 0x7ffd9d7fe6c0 (LWP 7430)]
[Thread 0x7fffaa7fc6c0 (LWP 7425) exited]
[New Thread 0x7ffd9cffd6c0 (LWP 7431)]
[Thread 0x7fffa97fa6c0 (LWP 7427) exited]
[Thread 0x7fffa9ffb6c0 (LWP 7426) exited]
[Thread 0x7fffa8ff96c0 (LWP 7428) exited]
[Thread 0x7ffd9dfff6c0 (LWP 7429) exited]
[Thread 0x7ffd9d7fe6c0 (LWP 7430) exited]
[Thread 0x7ffd9cffd6c0 (LWP 7431) exited]
[Thread 0x7fffcc1f26c0 (LWP 7415) exited]
[New Thread 0x7fffcc1f26c0 (LWP 7432)]
[New Thread 0x7ffd9cffd6c0 (LWP 7433)]
[New Thread 0x7ffd9d7fe6c0 (LWP 7434)]
[Thread 0x7ffd9cffd6c0 (LWP 7433) exited]
[Thread 0x7ffd9d7fe6c0 (LWP 7434) exited]
[New Thread 0x7ffd9dfff6c0 (LWP 7435)]
[Thread 0x7fffcc1f26c0 (LWP 7432) exited]
[Thread 0x7ffd9dfff6c0 (LWP 7435) exited]
[New Thread 0x7fffcfcd86c0 (LWP 7436)]
[New Thread 0x7fffcf4d76c0 (LWP 7437)]
[Thread 0x7fffcfcd86c0 (LWP 7436) exited]
[New Thread 0x7fffcecd66c0 (LWP 7438)]
[Thread 0x7fffcf4d76c0 (LWP 7437) exited]
[New Thread 0x7fffce4d56c0 (LWP 7439)]
[Thread 0x7fffcecd66c0 (LWP 7438) exited]
[New Thread 0x7fffcdcd46c0 (LWP 7440)]
[Thread 0x7fffce4d56c0 (LWP 7439) exited]
[New Thread 0x7fffcd4d36c0 (LWP 7441)]
[Thread 0x7fffcdcd46c0 (LWP 7440) exited]
[Thread 0x7fffcd4d36c0 (LWP 7441) exited]
[New Thread 0x7fffcccd26c0 (LWP 7442)]
[New Thread 0x7fffab7fe6c0 (LWP 7443)]
[Thread 0x7fffcccd26c0 (LWP 7442) exited]
[New Thread 0x7fffaaffd6c0 (LWP 7444)]
[Thread 0x7fffab7fe6c0 (LWP 7443) exited]
[Thread 0x7fffaaffd6c0 (LWP 7444) exited]
[New Thread 0x7fffaa7fc6c0 (LWP 7445)]
[New Thread 0x7fffa9ffb6c0 (LWP 7446)]
[Thread 0x7fffaa7fc6c0 (LWP 7445) exited]
[Thread 0x7fffa9ffb6c0 (LWP 7446) exited]
[New Thread 0x7fffa9ffb6c0 (LWP 7447)]
[Thread 0x7fffa9ffb6c0 (LWP 7447) exited]
[Detaching after fork from child process 7448]
[New Thread 0x7fffa9ffb6c0 (LWP 7449)]
[New Thread 0x7fffaa7fc6c0 (LWP 7450)]
[New Thread 0x7fffaaffd6c0 (LWP 7451)]
[Thread 0x7fffaa7fc6c0 (LWP 7450) exited]
[Thread 0x7fffa9ffb6c0 (LWP 7449) exited]
[New Thread 0x7fffab7fe6c0 (LWP 7452)]
[Thread 0x7fffaaffd6c0 (LWP 7451) exited]
[New Thread 0x7fffcfcd86c0 (LWP 7453)]
[Thread 0x7fffab7fe6c0 (LWP 7452) exited]
[New Thread 0x7fffcf4d76c0 (LWP 7454)]
[Thread 0x7fffcfcd86c0 (LWP 7453) exited]
[New Thread 0x7fffcecd66c0 (LWP 7455)]
[Thread 0x7fffcf4d76c0 (LWP 7454) exited]
[New Thread 0x7fffce4d56c0 (LWP 7456)]
[Thread 0x7fffcecd66c0 (LWP 7455) exited]
[New Thread 0x7fffcdcd46c0 (LWP 7457)]
[Thread 0x7fffce4d56c0 (LWP 7456) exited]
[New Thread 0x7fffcd4d36c0 (LWP 7458)]
[Thread 0x7fffcdcd46c0 (LWP 7457) exited]
[Thread 0x7fffcd4d36c0 (LWP 7458) exited]
[New Thread 0x7fffcccd26c0 (LWP 7459)]
[New Thread 0x7fffcc4d16c0 (LWP 7460)]
[Thread 0x7fffcccd26c0 (LWP 7459) exited]
[New Thread 0x7fffa97fa6c0 (LWP 7461)]
[Thread 0x7fffcc4d16c0 (LWP 7460) exited]
[New Thread 0x7fffa8ff96c0 (LWP 7462)]
[Thread 0x7fffa97fa6c0 (LWP 7461) exited]
[New Thread 0x7ffd9dfff6c0 (LWP 7463)]
[Thread 0x7fffa8ff96c0 (LWP 7462) exited]
[Thread 0x7ffd9dfff6c0 (LWP 7463) exited]
[New Thread 0x7ffd9dfff6c0 (LWP 7464)]
[New Thread 0x7fffa8ff96c0 (LWP 7465)]
[New Thread 0x7fffa97fa6c0 (LWP 7466)]
[New Thread 0x7fffcfcd86c0 (LWP 7468)]
[New Thread 0x7fffcc4d16c0 (LWP 7467)]
[New Thread 0x7fffcf4d76c0 (LWP 7469)]
[New Thread 0x7fffcecd66c0 (LWP 7470)]

Thread 74 "ZMQbg/IO/0" received signal SIGSEGV, Segmentation fault.
[Switching to Thread 0x7fffcecd66c0 (LWP 7470)]
0x00007fffcaf82224 in std::codecvt<char16_t, char, __mbstate_t>::do_unshift(__mbstate_t&, char*, char*, char*&) const () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
  Id   Target Id                                          Frame 
  1    Thread 0x7ffff7e7b300 (LWP 7372) "python3"         0x00007ffff7c98e51 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
  17   Thread 0x7fffb13b36c0 (LWP 7400) "cuda00002c0000c" 0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
  18   Thread 0x7fffabfff6c0 (LWP 7401) "python3"         0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
  19   Thread 0x7fffcb9f16c0 (LWP 7413) "cuda-EvtHandlr"  0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
  68   Thread 0x7ffd9dfff6c0 (LWP 7464) "python3"         0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
  69   Thread 0x7fffa8ff96c0 (LWP 7465) "python3"         0x00007ffff7c98e51 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
  70   Thread 0x7fffa97fa6c0 (LWP 7466) "python3"         0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
  71   Thread 0x7fffcfcd86c0 (LWP 7468) "ZMQbg/Reaper"    0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
  72   Thread 0x7fffcc4d16c0 (LWP 7467) "ZMQbg/Reaper"    0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
  73   Thread 0x7fffcf4d76c0 (LWP 7469) "ZMQbg/IO/0"      0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
* 74   Thread 0x7fffcecd66c0 (LWP 7470) "ZMQbg/IO/0"      0x00007fffcaf82224 in std::codecvt<char16_t, char, __mbstate_t>::do_unshift(__mbstate_t&, char*, char*, char*&) const () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so

Thread 74 (Thread 0x7fffcecd66c0 (LWP 7470) "ZMQbg/IO/0"):
#0  0x00007fffcaf82224 in std::codecvt<char16_t, char, __mbstate_t>::do_unshift(__mbstate_t&, char*, char*, char*&) const () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#1  0x00007fffcafe6cc1 in std::basic_ostream<char, std::char_traits<char> >& std::basic_ostream<char, std::char_traits<char> >::_M_insert<long>(long) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#2  0x00007ffff37b35c4 in ?? () from /work/main/.devlib/libzmq.so.5
#3  0x00007ffff37b39f8 in ?? () from /work/main/.devlib/libzmq.so.5
#4  0x00007ffff37b4028 in ?? () from /work/main/.devlib/libzmq.so.5
#5  0x00007ffff37b1630 in ?? () from /work/main/.devlib/libzmq.so.5
#6  0x00007ffff37716f0 in ?? () from /work/main/.devlib/libzmq.so.5
#7  0x00007ffff37b7d9b in ?? () from /work/main/.devlib/libzmq.so.5
#8  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#9  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 73 (Thread 0x7fffcf4d76c0 (LWP 7469) "ZMQbg/IO/0"):
#0  0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff37716a0 in ?? () from /work/main/.devlib/libzmq.so.5
#2  0x00007ffff37b7d9b in ?? () from /work/main/.devlib/libzmq.so.5
#3  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#4  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 72 (Thread 0x7fffcc4d16c0 (LWP 7467) "ZMQbg/Reaper"):
#0  0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff37716a0 in ?? () from /work/main/.devlib/libzmq.so.5
#2  0x00007ffff37b7d9b in ?? () from /work/main/.devlib/libzmq.so.5
#3  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#4  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 71 (Thread 0x7fffcfcd86c0 (LWP 7468) "ZMQbg/Reaper"):
#0  0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff37716a0 in ?? () from /work/main/.devlib/libzmq.so.5
#2  0x00007ffff37b7d9b in ?? () from /work/main/.devlib/libzmq.so.5
#3  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#4  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 70 (Thread 0x7fffa97fa6c0 (LWP 7466) "python3"):
#0  0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff37a195e in ?? () from /work/main/.devlib/libzmq.so.5
#2  0x00007ffff377a71e in ?? () from /work/main/.devlib/libzmq.so.5
#3  0x00007ffff37a5265 in ?? () from /work/main/.devlib/libzmq.so.5
#4  0x00007ffff37a6330 in ?? () from /work/main/.devlib/libzmq.so.5
#5  0x00007ffff37c49fc in zmq_msg_recv () from /work/main/.devlib/libzmq.so.5
#6  0x00007fffca096b72 in qgpu::live::(anonymous namespace)::recv_message(zmq::socket_t&, qgpu::live::(anonymous namespace)::Received&, qgpu::live::Endpoint const&) () from /work/main/.devbin/libquantem_gpu.so
#7  0x00007fffca09a2cb in qgpu::live::Receiver::run_dectris(bool) () from /work/main/.devbin/libquantem_gpu.so
#8  0x00007fffcaf226de in std::thread::_State_impl<std::thread::_Invoker<std::tuple<qgpu::py::(anonymous namespace)::Live::Live(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, qgpu::live::AcquisitionOptions, qgpu::live::ReceiveOptions)::{lambda()#1}> > >::_M_run() () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#9  0x00007fffcaf60fa4 in execute_native_thread_routine () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#10 0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#11 0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 69 (Thread 0x7fffa8ff96c0 (LWP 7465) "python3"):
#0  0x00007ffff7c98e51 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff7c9c1f6 in pthread_cond_clockwait () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x00007fffca08dce4 in qgpu::live::Acquisition::worker() () from /work/main/.devbin/libquantem_gpu.so
#3  0x00007fffcaf60fa4 in execute_native_thread_routine () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#4  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#5  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 68 (Thread 0x7ffd9dfff6c0 (LWP 7464) "python3"):
#0  0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff37a195e in ?? () from /work/main/.devlib/libzmq.so.5
#2  0x00007ffff377a71e in ?? () from /work/main/.devlib/libzmq.so.5
#3  0x00007ffff37a5265 in ?? () from /work/main/.devlib/libzmq.so.5
#4  0x00007ffff37a5565 in ?? () from /work/main/.devlib/libzmq.so.5
#5  0x00007ffff37c46b4 in zmq_send () from /work/main/.devlib/libzmq.so.5
#6  0x00007fffca0a0ce1 in qgpu::live::(anonymous namespace)::run_dectris(qgpu::live::StreamSource const&, qgpu::live::SimulateOptions const&, std::atomic<bool> const*)::{lambda(std::vector<std::vector<unsigned char, std::allocator<unsigned char> >, std::allocator<std::vector<unsigned char, std::allocator<unsigned char> > > > const&)#1}::operator()(std::vector<std::vector<unsigned char, std::allocator<unsigned char> >, std::allocator<std::vector<unsigned char, std::allocator<unsigned char> > > > const&) const () from /work/main/.devbin/libquantem_gpu.so
#7  0x00007fffca0a2612 in qgpu::live::(anonymous namespace)::run_dectris(qgpu::live::StreamSource const&, qgpu::live::SimulateOptions const&, std::atomic<bool> const*) () from /work/main/.devbin/libquantem_gpu.so
#8  0x00007fffca0a34af in qgpu::live::simulate_detector(qgpu::live::StreamSource const&, qgpu::live::SimulateOptions const&, std::atomic<bool> const*) () from /work/main/.devbin/libquantem_gpu.so
#9  0x00007fffca0a6753 in qgpu::live::simulate_detector(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, qgpu::live::SimulateOptions const&, std::atomic<bool> const*) () from /work/main/.devbin/libquantem_gpu.so
#10 0x00007fffcaf26163 in qgpu::py::bind_live(pybind11::module_&)::{lambda(std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double)#1}::operator()(std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double) const [clone .isra.0] () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#11 0x00007fffcaf2666a in pybind11::dict pybind11::detail::function_ref<pybind11::dict (std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double)>::callback_fn<qgpu::py::bind_live(pybind11::module_&)::{lambda(std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double)#1}>(long, std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#12 0x00007fffcaf2c4a6 in pybind11::handle pybind11::cpp_function::call_impl<pybind11::dict, pybind11::detail::void_type, pybind11::detail::argument_loader<std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double>, std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double>(pybind11::detail::function_call&, pybind11::detail::function_ref<pybind11::dict (std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double)>) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#13 0x00007fffcaf24bfb in pybind11::cpp_function::initialize<qgpu::py::bind_live(pybind11::module_&)::{lambda(std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double)#1}, pybind11::dict, std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double, pybind11::name, pybind11::scope, pybind11::sibling, pybind11::arg, pybind11::arg, pybind11::arg, pybind11::arg, pybind11::arg, pybind11::arg, pybind11::arg, pybind11::arg, pybind11::arg>(qgpu::py::bind_live(pybind11::module_&)::{lambda(std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double)#1}&&, pybind11::dict (*)(std::filesystem::__cxx11::path const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int, double, unsigned long, unsigned long, unsigned long, double), pybind11::name const&, pybind11::scope const&, pybind11::sibling const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&, pybind11::arg const&)::{lambda(pybind11::detail::function_call&)#1}::_FUN(pybind11::detail::function_call&) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#14 0x00007fffcaee3a72 in pybind11::cpp_function::dispatcher(_object*, _object* const*, unsigned long, _object*) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#15 0x0000000000581fed in ?? ()
#16 0x00000000005db2ee in _PyEval_EvalFrameDefault ()
#17 0x000000000054cb52 in ?? ()
#18 0x00000000006f899c in ?? ()
#19 0x00000000006b93bc in ?? ()
#20 0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#21 0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 19 (Thread 0x7fffcb9f16c0 (LWP 7413) "cuda-EvtHandlr"):
#0  0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007fffb16cdf27 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#2  0x00007fffb17ba967 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#3  0x00007fffb16bad73 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#4  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#5  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 18 (Thread 0x7fffabfff6c0 (LWP 7401) "python3"):
#0  0x00007ffff7d2a2d2 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007fffb0611796 in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#2  0x00007fffb060ecf9 in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#3  0x00007fffb0610d5a in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#4  0x00007fffb061b88a in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#5  0x00007fffb061bd9b in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#6  0x00007fffb05d490d in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#7  0x00007fffb0829dfd in ?? () from /usr/local/nvidia/lib64/libcudadebugger.so.1
#8  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#9  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 17 (Thread 0x7fffb13b36c0 (LWP 7400) "cuda00002c0000c"):
#0  0x00007ffff7d1b79d in poll () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007fffb16cdf27 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#2  0x00007fffb17ba967 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#3  0x00007fffb16bad73 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#4  0x00007ffff7c9cb84 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#5  0x00007ffff7d29ecc in ?? () from /lib/x86_64-linux-gnu/libc.so.6

Thread 1 (Thread 0x7ffff7e7b300 (LWP 7372) "python3"):
#0  0x00007ffff7c98e51 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff7c9c1f6 in pthread_cond_clockwait () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x00007fffca0782de in qgpu::live::Acquisition::wait_finished(unsigned long, double) const () from /work/main/.devbin/libquantem_gpu.so
#3  0x00007fffcaf25ddf in bool pybind11::detail::function_ref<bool (qgpu::py::(anonymous namespace)::Live const&, unsigned long, double)>::callback_fn<qgpu::py::bind_live(pybind11::module_&)::{lambda(qgpu::py::(anonymous namespace)::Live const&, unsigned long, double)#1}>(long, qgpu::py::(anonymous namespace)::Live const&, unsigned long, double) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#4  0x00007fffcaf26a5e in pybind11::cpp_function::initialize<qgpu::py::bind_live(pybind11::module_&)::{lambda(qgpu::py::(anonymous namespace)::Live const&, unsigned long, double)#1}, bool, qgpu::py::(anonymous namespace)::Live const&, unsigned long, double, pybind11::name, pybind11::is_method, pybind11::sibling, pybind11::arg, pybind11::arg>(qgpu::py::bind_live(pybind11::module_&)::{lambda(qgpu::py::(anonymous namespace)::Live const&, unsigned long, double)#1}&&, bool (*)(qgpu::py::(anonymous namespace)::Live const&, unsigned long, double), pybind11::name const&, pybind11::is_method const&, pybind11::sibling const&, pybind11::arg const&, pybind11::arg const&)::{lambda(pybind11::detail::function_call&)#1}::_FUN(pybind11::detail::function_call&) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#5  0x00007fffcaee3a72 in pybind11::cpp_function::dispatcher(_object*, _object* const*, unsigned long, _object*) () from /tmp/qgpu-py/quantem/gpu/_qgpu.cpython-312-x86_64-linux-gnu.so
#6  0x0000000000581fed in ?? ()
#7  0x000000000054b12c in PyObject_Call ()
#8  0x00000000005db2ee in _PyEval_EvalFrameDefault ()
#9  0x000000000054a8ca in _PyObject_Call_Prepend ()
#10 0x00000000005a3778 in ?? ()
#11 0x000000000054907e in _PyObject_MakeTpCall ()
#12 0x00000000005d710f in _PyEval_EvalFrameDefault ()
#13 0x000000000054a8ca in _PyObject_Call_Prepend ()
#14 0x00000000005a3778 in ?? ()
#15 0x000000000054b12c in PyObject_Call ()
#16 0x00000000005db2ee in _PyEval_EvalFrameDefault ()
#17 0x000000000054a8ca in _PyObject_Call_Prepend ()
#18 0x00000000005a3778 in ?? ()
#19 0x000000000054907e in _PyObject_MakeTpCall ()
#20 0x00000000005d710f in _PyEval_EvalFrameDefault ()
#21 0x000000000054a8ca in _PyObject_Call_Prepend ()
#22 0x00000000005a3778 in ?? ()
#23 0x000000000054907e in _PyObject_MakeTpCall ()
#24 0x00000000005d710f in _PyEval_EvalFrameDefault ()
