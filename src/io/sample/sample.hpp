#pragma once
// Simulated 4D-STEM data: a convergent probe scanned over a weak phase object made of atoms, far-field
// diffraction intensities with Poisson counts, written EIGER/ARINA style as bitshuffle+LZ4 (filter 32008) chunks.
#include <cstddef>
#include <hdf5.h>

#include <complex>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/electron.hpp"
#include <nlohmann/json.hpp>

namespace qgpu::sample {

struct SampleSpec {
  std::size_t scan_rows = 32, scan_cols = 32;
  std::size_t det_rows = 64, det_cols = 64;
  DType dtype = DType::u16;
  double energy_kev = 300.0;
  double semiangle_mrad = 20.0;
  double disk_radius_px = 0;        // BF disk radius on the detector; 0 = det_rows / 6
  std::size_t scan_step_px = 2;     // scan step in simulation pixels (integer: no interpolation)
  double defocus_angstrom = 0.0;    // Krivanek C1 (chi = pi*lambda*C1*k^2, probe exp(-i chi), object exp(+i phi)):
                                    // positive = OVERFOCUS; C1 = -defocus of py4DSTEM/abTEM/Kirkland (docs/conventions.md)
  double astigmatism_angstrom = 0;  // A1 (two-fold astigmatism, C12), ssb::Aberrations convention (ssb/ssb.hpp):
  double astigmatism_angle_deg = 0; // chi += pi lambda A1 |k|^2 cos 2(phi - angle), phi from the scan col axis
                                    // towards the scan row axis; py4DSTEM phi12 = 90 deg - angle (docs/conventions.md)
  double rotation_deg = 0;          // scan-detector rotation and transpose as dpc::calibrate_rotation reports them
  bool transpose = false;           // (detector vector -> scan: transpose first, then rotate); needs a square detector
  bool defocus_in_calibration = true;  // false: no defocus_angstrom in /entry/calibration (no sign hint; truth keeps it)
  double lattice_angstrom = 3.9;    // atoms on a square lattice with this spacing
  double atom_phase = 0.25;         // peak phase of one atom (radians): weak phase object
  double atom_sigma_angstrom = 0.35;
  double dose_per_frame = 0;        // mean counts per frame; 0 = dtype default (uint8 200, uint16 4000, uint32 20000)
  std::uint64_t seed = 1;
  unsigned threads = 0;             // 0 = hardware concurrency
  bool compress = true;             // false: plain chunks without filter (for tests of other layouts)
  bool four_d = false;              // store as (scan_r, scan_c, det_r, det_c) instead of (frames, det_r, det_c)
  bool big_endian = false;          // store the counts big-endian (HDF5 datatype U16BE/U32BE; uint8 as U8BE)
};

// Derived physical sampling of a spec.
struct Sampling {
  double wavelength_angstrom;   // relativistic electron wavelength
  double dx_angstrom;           // simulation pixel (real space)
  double dk_per_angstrom;       // detector pixel (reciprocal space), row and col for a square detector
  double mrad_per_pixel;        // detector pixel as scattering angle
  double scan_step_angstrom;
  double disk_radius_px;
  double dose_per_frame;        // mean counts per frame actually used
};
Sampling sampling(const SampleSpec& s);

// Relativistic electron wavelength in angstrom for an accelerating voltage in kV (core/electron.hpp).
using qgpu::electron_wavelength_angstrom;

// Simulates frames [first, first + count) (flat scan index) into out (count * det_rows * det_cols counts).
// Deterministic for a seed whatever the thread count.
void simulate_frames(const SampleSpec& s, std::size_t first, std::size_t count, void* out);

// The simulated probe in real space on the det_rows x det_cols window (dx_angstrom pixels), centred at
// (det_rows / 2, det_cols / 2), sum |probe|^2 = 1: IFFT (exp(+2 pi i k.r)) of aperture * exp(-i chi).
std::vector<std::complex<float>> probe_wave(const SampleSpec& s);

// Phase of the object at each scan position (scan_rows * scan_cols), the truth for later reconstructions.
std::vector<float> object_phase_at_scan(const SampleSpec& s);

// Writes the dataset to path: /entry/data/data (frames, det_r, det_c) one frame per chunk, bitshuffle+LZ4 (chunks
// encoded by our host codec on s.threads threads and written directly by io::DectrisWriter; the dataset carries the
// plugin's filter),
// attribute scan_shape, group /entry/calibration (energy_kev, semiangle_mrad, scan_step_angstrom,
// detector_mrad_per_pixel, disk_radius_px, defocus_angstrom, wavelength_angstrom), truth /entry/truth/phase.
void write_sample(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress = {});

// An EIGER/ARINA-style multi-file acquisition of the same frames: master `path` with external links
// /entry/data/data_000001..N to data files <stem>_data_000001.h5, ... beside it (stem = the master's name without
// extension and without a trailing "_master"), each holding /entry/data/data (frames, det_r, det_c) of consecutive
// frames (ceil(frames / files) each, the last one the rest), bitshuffle+LZ4, one frame per chunk. The master also
// holds entry/instrument/detector/detectorSpecific/{ntrigger = scan_rows, nimages = scan_cols, pixel_mask} (uint32,
// sample_bad_pixels() nonzero), /entry/calibration and /entry/truth/phase as write_sample. Returns the data files.
std::vector<std::string> write_sample_acquisition(const std::string& path, const SampleSpec& s, std::size_t files,
                                                  const std::function<void(double)>& progress = {});

// How write_sample_frames lays the frames out: a NumPy .npy file (4D when SampleSpec::four_d, else a 3D stack;
// SampleSpec::big_endian: '>u2' ...) or headerless raw frames (big-endian too when asked) with `offset` bytes before the first and frame_header/frame_footer bytes of zeros around each.
struct FramesLayout {
  bool npy = true;
  unsigned npy_version = 1;       // 1 or 2
  std::uint64_t offset = 0, frame_header = 0, frame_footer = 0;  // raw only
};

// The same frames as write_sample (simulate_frames), as .npy or raw frames (uncompressed: frames x frame bytes).
// py4DSTEM EMD 1.0 (io/emd/write_emd.hpp), stempy electron events (version 3) and LiberTEM raw CSR (TOML at path,
// <stem>_indptr.raw / _indices.raw / _data.raw beside it) of the same counts (io/sample/write_sparse_emd.cpp).
void write_sample_emd(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress = {});
void write_sample_stempy(const std::string& path, const SampleSpec& s,
                         const std::function<void(double)>& progress = {});
std::vector<std::string> write_sample_csr(const std::string& path, const SampleSpec& s,
                                          const std::function<void(double)>& progress = {});

void write_sample_frames(const std::string& path, const SampleSpec& s, const FramesLayout& layout,
                         const std::function<void(double)>& progress = {});
// The same simulated frames as a Merlin acquisition: .mib frames with the real header layout (384-byte headers
// single chip, 768 quad, MQ1A extension) and the .hdr beside them (Frames per Trigger = scan_cols, so the reader
// takes one trigger per scan row), counts clipped to the counter depth (dtype: uint8 for 1 and 6 bit, uint16 for 12,
// uint32 for 24). det_rows x det_cols is the decoded frame: single chip any size (ROI; raw: whole raw groups), quad
// 2s x 2s (514x514 with the gap: 2s + 2). files 0/1: one file at `path` and <stem>.hdr; N: <stem>_000001.mib ...
// Returns the files written, the .hdr last.
struct MibSampleOptions {
  std::uint32_t counter_depth = 12;  // 1, 6, 12, 24
  bool quad = false, raw = false, gap = false;
};
std::vector<std::string> write_sample_mib(const std::string& path, const SampleSpec& s, const MibSampleOptions& o,
                                          std::size_t files = 0, const std::function<void(double)>& progress = {});

// The bad pixels the sample master's pixel_mask flags: flat indices (row * det_cols + col), ascending; includes
// the detector centre (inside the bright-field disk, so never zero in the data).
std::vector<std::uint32_t> sample_bad_pixels(const SampleSpec& s);

// The simulation's calibration ({key: value}, the /entry/calibration attributes).
nlohmann::json sample_calibration(const SampleSpec& s);

// Writes the simulation's calibration attributes (<entry>/calibration) and its true phase (<entry>/truth/phase):
// shared by the single-file and the multi-file sample writers.
void write_calibration_and_truth(hid_t entry, const SampleSpec& s);

}  // namespace qgpu::sample

namespace qgpu::sample {

// The same simulated frames (s.dtype counts, as float32) as an EMPAD acquisition: `path` is the .xml (root/raw_file
// naming <stem>.raw beside it, scan_parameters[@mode="acquire"] scan_resolution_x = scan_cols, _y = scan_rows,
// iom_measurements/high_voltage from the energy), the .raw little-endian float32 frames of 130 x 128 whose last 2
// rows are a footer (each value the frame's index). The detector must be 128 x 128. `nans` values of the frames are
// NaN (frame (k * 7919) % frames, pixel ((k * 37) % 128, (k * 53) % 128) for k < nans). Returns {xml, raw}.
std::vector<std::string> write_sample_empad(const std::string& path, const SampleSpec& s, std::size_t nans = 0,
                                            const std::function<void(double)>& progress = {});

}  // namespace qgpu::sample
