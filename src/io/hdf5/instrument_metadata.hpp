#pragma once
// Calibration and scan shape from what an HDF5 4D-STEM file and its neighbours say about the instrument:
//
// 1. our own /entry/calibration attributes (qgpu sample, or written by a user): taken as they are;
// 2. the ARINA sidecar: a master named <stem>_master.h5 may have <stem>.h5 beside it (written by newer ARINA
//    software) whose group "STEM Metadata" holds, as attributes (or datasets) of one number each:
//    NumPixelsX / NumPixelsY (the scan: rows = NumPixelsY), Pixel Size (scan step, nm), High Tension (V),
//    Camera Length (m), Rotation (scan rotation, deg). The files state no units: these are what rosettasciio,
//    py4DSTEM and ncempy assume and what a real file holds (300000 = 300 kV, 0.115 = 115 mm). A High Tension
//    below 1000 is read as kV, a Camera Length of 10 or more as mm (said in the source);
// 3. the NeXus /entry/instrument of a DECTRIS master (EIGER/ARINA header documentation): beam/incident_wavelength
//    (angstrom, electron wavelength -> energy by the relativistic relation), beam/incident_energy and
//    detector/detectorSpecific/photon_energy (eV), detector/x_pixel_size, y_pixel_size, detector_distance (m),
//    beam_center_x / _y (pixels), count_time, frame_time (s); each dataset's `units` attribute is honoured
//    (m, mm, um, nm, angstrom; eV, keV; s, ms, us, ns; pixel) and the documented unit assumed when absent.
//
// Derived: energy_kev, scan_step_angstrom, detector_mrad_per_pixel (= 1000 x pixel size / camera length, the
// sidecar's Camera Length before the NeXus detector_distance), wavelength_angstrom, beam_center_row_px /
// beam_center_col_px, count_time_s, frame_time_s, scan_rotation_deg (the microscope's scan rotation; NOT the
// scan-detector rotation_deg that SSB/DPC use, which qgpu image calibrates). Sources earlier in the list win.
// A value that is not a single finite number, a size or time <= 0, a beam centre of (0, 0) (DECTRIS's "not set")
// or outside the detector is not used: a warning names it. Nothing here throws for a bad value; a sidecar that
// cannot be opened is a warning too.
#include <hdf5.h>

#include <cstddef>
#include <string>
#include <vector>

#include "io/calibration.hpp"

namespace qgpu::io {

inline constexpr const char* kStemMetadataGroup = "STEM Metadata";

struct FileMetadata {
  Calibration calibration;
  std::string sidecar;                  // the ARINA sidecar that was read ("" when none)
  std::vector<long long> sidecar_scan;  // (NumPixelsY, NumPixelsX) when the sidecar states both, else empty
  std::string sidecar_scan_source;      // e.g. "ARINA sidecar 'x.h5' STEM Metadata NumPixelsY x NumPixelsX"
};

// "<dir>/<stem>.h5" for "<dir>/<stem>_master.h5", else "" (no sidecar is looked for).
std::string arina_sidecar_path(const std::string& master_path);

// Reads 1-3 above for the file open as `file` (at `path`) with a det_rows x det_cols detector.
FileMetadata read_file_metadata(hid_t file, const std::string& path, std::size_t det_rows, std::size_t det_cols);

}  // namespace qgpu::io
