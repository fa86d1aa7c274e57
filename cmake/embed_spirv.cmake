# cmake -DSPV=<file.spv> -DOUT=<file.cpp> -DNAME=<symbol> -P embed_spirv.cmake
# Writes the SPIR-V words of SPV as `extern const qgpu::vulkan::Spirv NAME` (device/vulkan/spirv.hpp).
file(READ "${SPV}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
math(EXPR rem "${bytes} % 4")
if(NOT rem EQUAL 0 OR bytes EQUAL 0)
  message(FATAL_ERROR "${SPV}: ${bytes} bytes is not a SPIR-V module")
endif()
# little-endian 32-bit words: bytes b0 b1 b2 b3 -> 0xb3b2b1b0
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n  " words "${words}")
math(EXPR count "${bytes} / 4")
file(WRITE "${OUT}.tmp" "// generated from ${SPV} by cmake/embed_spirv.cmake: do not edit\n"
     "#include \"device/vulkan/spirv.hpp\"\n"
     "namespace {\nconst std::uint32_t words[${count}] = {\n  ${words}\n};\n}  // namespace\n"
     "namespace qgpu::vulkan::shaders {\nextern const Spirv ${NAME}{\"${NAME}\", words, ${count}};\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
