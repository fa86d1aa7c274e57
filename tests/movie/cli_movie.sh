#!/bin/bash
# usage: cli_movie.sh QGPU DIR. `qgpu movie` end to end (CPU backend): MP4 and GIF checked with ffprobe; bad options
# refused with one error line before the file is loaded.
set -euo pipefail
qgpu=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
"$qgpu" sample "$dir/scan.h5" --scan 10 12 --detector 24 24 >/dev/null 2>&1
probe() { ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=codec_name,width,height,nb_read_frames \
          -of csv=p=0 "$1"; }
out=$("$qgpu" movie "$dir/scan.h5" -o "$dir/adf.mp4" --backend cpu --adf-sweep 3 9 --frames 7 --fps 5 --label \
      --size 97 61 --colormap magma 2>/dev/null)
grep -qF "movie $dir/adf.mp4: 7 frames 98x62" <<<"$out" || { echo "unexpected output: $out"; exit 1; }
got=$(probe "$dir/adf.mp4")
[ "$got" = "h264,98,62,7" ] || { echo "mp4 probe: $got"; exit 1; }
grep -qF '"operation": "movie.adf_sweep"' "$dir/adf.mp4.json" || { echo "no provenance beside the movie"; exit 1; }
grep -qF '"frame_labels"' "$dir/adf.mp4.json" || { echo "provenance lacks the frame labels"; exit 1; }
rate=$(ffprobe -v error -select_streams v:0 -show_entries stream=avg_frame_rate -of csv=p=0 "$dir/adf.mp4")
[ "$rate" = "5/1" ] || { echo "mp4 frame rate: $rate"; exit 1; }
"$qgpu" movie "$dir/scan.h5" -o "$dir/row.gif" --backend cpu --path-row 4 --resize nearest --size 48 48 >/dev/null 2>&1
got=$(probe "$dir/row.gif")
[ "$got" = "gif,48,48,12" ] || { echo "gif probe: $got"; exit 1; }
"$qgpu" movie "$dir/scan.h5" -o "$dir/line.gif" --backend cpu --path-line 0 0 9 11 --frames 4 >/dev/null 2>&1
got=$(probe "$dir/line.gif")
[ "$got" = "gif,24,24,4" ] || { echo "line gif probe: $got"; exit 1; }

refuse() {  # refuse "expected message" args...
  local want=$1; shift
  if "$qgpu" movie "$dir/scan.h5" --backend cpu "$@" >"$dir/out" 2>"$dir/err"; then echo "accepted: $*"; exit 1; fi
  grep -qF -- "$want" "$dir/err" || { echo "for $*:"; cat "$dir/err"; exit 1; }
  if grep -q loading "$dir/err"; then echo "loaded before refusing: $*"; exit 1; fi
}
refuse "start 9 is greater than stop 3" -o "$dir/x.mp4" --adf-sweep 9 3
refuse "frames must be 1..100000 (got 0)" -o "$dir/x.mp4" --bf-sweep 1 3 --frames 0
refuse "unknown extension (expected .mp4 or .gif)" -o "$dir/x.avi" --bf-sweep 1 3
refuse "does not exist" -o "$dir/missing/x.mp4" --bf-sweep 1 3
refuse "needs exactly one sequence" -o "$dir/x.mp4" --bf-sweep 1 3 --adf-sweep 1 3
refuse "needs exactly one sequence" -o "$dir/x.mp4"
[ ! -e "$dir/x.mp4" ] || { echo "a refused request left $dir/x.mp4"; exit 1; }
# Without the FFmpeg plugin (a machine without the FFmpeg libraries) a movie fails with the reason and the way out,
# leaving no file, and everything else still runs.
if QGPU_MOVIE_PLUGIN="$dir/no-plugin.so" "$qgpu" movie "$dir/scan.h5" -o "$dir/np.gif" --backend cpu --path-row 1 \
     >"$dir/out" 2>"$dir/err"; then echo "a movie without its plugin succeeded"; exit 1; fi
grep -qF "the FFmpeg plugin, which does not load here" "$dir/err" || { echo "no-plugin error:"; cat "$dir/err"; exit 1; }
grep -qF "install the FFmpeg libraries" "$dir/err" || { echo "no-plugin error lacks the way out:"; cat "$dir/err"; exit 1; }
[ ! -e "$dir/np.gif" ] || { echo "a failed movie left $dir/np.gif"; exit 1; }
QGPU_MOVIE_PLUGIN="$dir/no-plugin.so" "$qgpu" image "$dir/scan.h5" --backend cpu --bf 4 -o "$dir/np" >/dev/null 2>&1 ||
  { echo "qgpu image failed without the movie plugin"; exit 1; }
echo "qgpu movie: ok"
