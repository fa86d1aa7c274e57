#pragma once
// The HDF5 bitshuffle filter (id 32008), made available to this process.
namespace qgpu::h5 {

inline constexpr int kBitshuffleFilter = 32008;
inline constexpr unsigned kBitshuffleLz4 = 2;  // cd_values[4]

// Registers the bitshuffle+LZ4 filter from its HDF5 plugin (libh5bshuf.so, Debian package 'bitshuffle')
// unless HDF5 already has it. Looks in $QGPU_BSHUF_PLUGIN (a file), each folder of $HDF5_PLUGIN_PATH, then
// Debian's plugin folder. Raises IoError naming the places it looked when the plugin cannot be loaded.
void ensure_bitshuffle_filter();

}  // namespace qgpu::h5
