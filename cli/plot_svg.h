// The plot of `tensoropt plan --plot FILE.svg`: Pareto frontiers of training strategies, time per
// step (x) against memory per GPU (y), one staircase curve per GPU count, baselines as markers.
//
// Pure functions over a PlotSpec value; no state, thread-safe. The caller passes raw units
// (seconds, bytes); the axes pick ms/s and MiB/GiB from the data range, with 1-2-5 ticks. Memory
// starts at 0; time starts at 0 unless the data sit far from it. An axis whose positive data span
// more than 10x (1 to 64 GPUs) is logarithmic instead, ticks at 1, 2 and 5 times powers of ten,
// its title saying "log scale"; a zero keeps it linear. Points that are NaN, infinite or
// negative are skipped (never printed), as is such a budget. Labels are XML-escaped; a curve or a
// marker's kind is always listed in the legend, and a marker is also labelled on the plot (right, left,
// above or below it) when that label overlaps nothing drawn. Colours repeat after 7 curves. The
// canvas is as wide as its texts need, measured by text_width: no title or legend text runs past
// its right edge. Same spec -> identical bytes.
//
// Baselines are drawn by kind: one shape per kind, coloured by their curve (GPU count), and one
// legend row per kind, so 3 baselines at 7 GPU counts make 3 rows, not 21.
// Element classes the tests (and anyone restyling the file) can rely on: "frontier" (one path per
// curve with at least one point), "point" (one dot per frontier point), "marker" (one per baseline
// with a usable point), "legend-marker" (one per baseline kind), "chosen", "budget", "tick-x",
// "tick-y", "grid", "legend".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensoropt::cli {

struct PlotPoint {
  double time_s = 0;        // time per training step, seconds
  double memory_bytes = 0;  // peak memory per GPU, bytes
};

struct PlotCurve {
  std::string label;              // "8 GPUs"
  std::vector<PlotPoint> points;  // a Pareto frontier; sorted by time here, so any order is drawn right
};

struct PlotMarker {
  std::string label;  // "pure DP (8 GPUs)"
  std::string kind;   // "pure DP": markers of one kind share a shape and one legend row ("": the label)
  PlotPoint point;
  int curve = -1;     // index into PlotSpec::curves whose colour it takes; -1 (or out of range): grey
};

struct PlotSpec {
  std::string title;                          // "gpt2_small.onnx, batch 8, h100-sxm"
  std::vector<PlotCurve> curves;
  std::vector<PlotMarker> markers;            // baselines
  std::optional<PlotPoint> chosen;            // the point picked for the memory budget, ringed
  std::optional<double> memory_budget_bytes;  // dashed horizontal line, labelled; only named in the
                                              // legend when above twice the highest point
};

// The width in pixels of `s` (UTF-8) set at `font_size` px, measured conservatively: at least its
// advance width in DejaVu Sans and in DejaVu Sans Bold (wider than Arial, Helvetica and Liberation
// Sans, the other usual "sans-serif" fonts); any character outside printable ASCII counts a full em.
double text_width(std::string_view s, double font_size);

// A complete standalone SVG document (UTF-8, starts with "<svg", ends with "</svg>\n").
std::string render_svg(const PlotSpec& spec);

// Writes render_svg(spec) to `path`. Throws tensoropt::InputError naming the path when the file
// cannot be opened or written.
void write_svg(const PlotSpec& spec, const std::string& path);

}  // namespace tensoropt::cli
