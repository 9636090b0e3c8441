#include "cli/plot_svg.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numbers>

#include "cli/format.h"
#include "graph/error.h"

namespace tensoropt::cli {
namespace {

// Canvas layout in pixels: the plot area, then the legend column to its right, at least kLegendW
// wide and as wide as its longest text needs, plus kMargin.
constexpr double kLeft = 78, kTop = 48, kWidth = 560, kHeight = 380, kBottom = 58, kLegendW = 160, kMargin = 16;
// Okabe-Ito: distinguishable under the common colour-vision deficiencies (yellow left out: too pale).
const char* const kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000"};
constexpr const char* kGrey = "#666666";

// Finite, non-negative and below 1e30 (no real step or GPU comes near; keeps axis padding finite).
bool usable_value(double v) { return std::isfinite(v) && v >= 0 && v < 1e30; }
bool usable(const PlotPoint& p) { return usable_value(p.time_s) && usable_value(p.memory_bytes); }

// Fixed-point with `decimals` digits, locale-independent, never "-0".
std::string num(double v, int decimals = 1) {
  char buf[64];
  if (std::fabs(v) < 0.5 * std::pow(10.0, -decimals)) v = 0;
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  return std::string(buf, r.ptr);
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* colour(int curve, size_t curve_count) {
  if (curve < 0 || static_cast<size_t>(curve) >= curve_count) return kGrey;
  return kPalette[static_cast<size_t>(curve) % std::size(kPalette)];
}

struct Unit {
  double factor;
  const char* name;
};

// An axis in display units (raw / unit.factor) from lo to hi with its tick values: linear, ticks
// every `step`; or logarithmic (when the data span more than kLogSpan), ticks at 1, 2 and 5 times
// powers of ten (only the powers when those would be too many).
struct Axis {
  Unit unit{1, ""};
  double lo = 0, hi = 1, step = 1;
  int decimals = 0;  // linear: of every tick
  bool log = false;
  std::vector<double> ticks;
  double frac(double raw) const {
    const double v = raw / unit.factor;
    if (!log) return (v - lo) / (hi - lo);
    return (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }
  int decimals_of(double tick) const { return log ? std::max(0, static_cast<int>(-std::floor(std::log10(tick) + 1e-9))) : decimals; }
};

// Data spanning more than this factor get a log axis: 16 to 64 GPUs squeezed into a corner otherwise.
constexpr double kLogSpan = 10;

double nice_step(double range) {  // 1, 2 or 5 times a power of ten: 5 to 10 ticks over `range`
  double raw = range / 6, mag = std::pow(10.0, std::floor(std::log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// The 1-2-5 value at or below (down) or at or above (!down) v > 0.
double nice_bound(double v, bool down) {
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  const double steps[] = {1, 2, 5, 10};
  if (down) {
    double best = mag;
    for (double k : steps)
      if (k * mag <= v * (1 + 1e-12)) best = k * mag;
    return best;
  }
  for (double k : steps)
    if (k * mag >= v * (1 - 1e-12)) return k * mag;
  return 10 * mag;
}

// Units: the largest whose factor raw_max reaches. REQUIRES: units ascending by factor.
Unit unit_for(double raw_max, const std::vector<Unit>& units) {
  Unit u = units.front();
  for (const Unit& x : units)
    if (raw_max >= x.factor) u = x;
  return u;
}

// REQUIRES: 0 < raw_min <= raw_max, both finite, raw_max > kLogSpan * raw_min.
Axis make_log_axis(double raw_min, double raw_max, const std::vector<Unit>& units) {
  Axis a;
  a.log = true;
  a.unit = unit_for(raw_max, units);
  a.lo = nice_bound(raw_min / a.unit.factor, true);
  a.hi = nice_bound(raw_max / a.unit.factor, false);
  const double first = std::floor(std::log10(a.lo)), last = std::ceil(std::log10(a.hi));
  for (int pass = 0; pass < 2 && (a.ticks.empty() || a.ticks.size() > 12); ++pass) {
    a.ticks.clear();
    for (double e = first; e <= last; ++e)
      for (double k : pass == 0 ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double t = k * std::pow(10.0, e);
        if (t >= a.lo * (1 - 1e-12) && t <= a.hi * (1 + 1e-12)) a.ticks.push_back(t);
      }
  }
  return a;
}

// REQUIRES: 0 <= raw_min <= raw_max, both finite; units ascending by factor.
Axis make_axis(double raw_min, double raw_max, bool from_zero, const std::vector<Unit>& units) {
  Axis a;
  a.unit = unit_for(raw_max, units);
  double lo = raw_min / a.unit.factor, hi = raw_max / a.unit.factor, span = hi - lo;
  if (span > 1e-9 * hi) {  // a narrower span would put ticks closer than doubles can tell apart
    lo -= 0.05 * span;
    hi += 0.05 * span;
  } else {
    double pad = lo > 0 ? 0.1 * lo : 1;
    lo -= pad;
    hi += pad;
  }
  if (from_zero || lo < 0.5 * hi) lo = 0;  // keep 0 in view unless the data sit far from it
  a.step = nice_step(hi - lo);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::max(std::ceil(hi / a.step) * a.step, a.lo + a.step);
  a.decimals = a.step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(a.step) - 1e-9));
  for (long i = 0, n = std::lround((a.hi - a.lo) / a.step); i <= n; ++i) a.ticks.push_back(a.lo + static_cast<double>(i) * a.step);
  return a;
}

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// Marker shapes as unit polygons: square, triangle up, diamond, triangle down, plus, star.
std::vector<std::pair<double, double>> shape(size_t i) {
  switch (i % 6) {
    case 0: return {{-.85, -.85}, {.85, -.85}, {.85, .85}, {-.85, .85}};
    case 1: return {{0, -1.2}, {1.1, .8}, {-1.1, .8}};
    case 2: return {{0, -1.25}, {1.25, 0}, {0, 1.25}, {-1.25, 0}};
    case 3: return {{0, 1.2}, {1.1, -.8}, {-1.1, -.8}};
    case 4:
      return {{-.4, -1.1}, {.4, -1.1}, {.4, -.4}, {1.1, -.4}, {1.1, .4}, {.4, .4},
              {.4, 1.1}, {-.4, 1.1}, {-.4, .4}, {-1.1, .4}, {-1.1, -.4}, {-.4, -.4}};
    default: {
      std::vector<std::pair<double, double>> star;
      for (int k = 0; k < 10; ++k) {
        double r = k % 2 ? 0.55 : 1.3, a = std::numbers::pi * (k / 5.0 - 0.5);
        star.push_back({r * std::cos(a), r * std::sin(a)});
      }
      return star;
    }
  }
}

std::string polygon(const char* cls, size_t shape_index, double x, double y, const char* fill) {
  std::string pts;
  for (auto [dx, dy] : shape(shape_index)) {
    if (!pts.empty()) pts += ' ';
    pts += num(x + 6 * dx);
    pts += ',';
    pts += num(y + 6 * dy);
  }
  return std::string("<polygon class=\"") + cls + "\" points=\"" + pts + "\" fill=\"" + fill +
         "\" stroke=\"#222222\" stroke-width=\"1\"/>\n";
}

std::string text(double x, double y, const std::string& s, int size, const char* anchor = "start",
                 const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + std::to_string(size) +
         "\" text-anchor=\"" + anchor + "\"" + extra + ">" + escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " + attrs + "/>\n";
}

std::string circle(double x, double y, double r, const std::string& attrs) {
  return "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\" " + attrs + "/>\n";
}

// One line of the legend: a symbol in a 26-px column (none for the baselines heading and the note
// on a budget above the chart, whose text starts at the column), then its text.
struct LegendRow {
  enum class Symbol { None, Curve, Marker, Chosen, Budget } symbol;
  size_t index = 0;          // the curve's or marker's
  std::string label;
  double space_before = 0;   // above the row, in addition to the row pitch
  const char* fill = nullptr;
  double text_x() const { return symbol == Symbol::None ? 0 : 36; }
};

// Baselines by kind (PlotMarker::kind, else each its own label): one shape and one legend row per
// kind, the colour saying the GPU count, so the legend stays short however many counts are plotted.
struct MarkerKinds {
  std::vector<std::string> names;  // in order of first appearance
  std::vector<size_t> of;          // per marker: index into names
};
MarkerKinds marker_kinds(const PlotSpec& spec) {
  MarkerKinds k;
  for (const PlotMarker& m : spec.markers) {
    const std::string& name = m.kind.empty() ? m.label : m.kind;
    auto it = std::find(k.names.begin(), k.names.end(), name);
    k.of.push_back(static_cast<size_t>(it - k.names.begin()));
    if (it == k.names.end()) k.names.push_back(name);
  }
  return k;
}

const std::string kBudgetStroke = "stroke=\"#444444\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"";
const std::string kChosenStroke = "fill=\"none\" stroke=\"#000000\" stroke-width=\"2.5\"";

}  // namespace

double text_width(std::string_view s, double font_size) {
  // Advance widths in thousandths of an em of ' ' (32) to '~' (126): the larger of DejaVu Sans and
  // DejaVu Sans Bold (rounded up), the widest of the fonts "sans-serif" usually resolves to.
  static constexpr uint16_t kAdvance[95] = {
      349, 457, 521, 838, 696, 1002, 873, 307, 458, 458, 523, 838, 380, 416, 380, 366,    // ' ' to '/'
      696, 696, 696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 581,     // '0' to '?'
      1000, 774, 763, 734, 831, 684, 684, 821, 837, 373, 373, 775, 638, 996, 837, 851,    // '@' to 'O'
      733, 851, 771, 721, 683, 813, 774, 1104, 771, 725, 726, 458, 366, 458, 838, 500,    // 'P' to '_'
      500, 675, 716, 593, 716, 679, 436, 716, 712, 343, 343, 666, 343, 1042, 712, 688,    // '`' to 'o'
      716, 716, 494, 596, 479, 712, 652, 924, 646, 652, 583, 712, 366, 712, 838};         // 'p' to '~'
  double em = 0;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 32 && c < 127) em += kAdvance[c - 32] / 1000.0;
    else if (c < 0x80 || c >= 0xC0) em += 1;  // a control character, or the lead byte of a UTF-8 code point
  }
  return em * font_size;
}

namespace {

// The chart's frame: the axes over everything drawn and the memory budget, mapped to pixels.
struct Frame {
  Axis ax, ay;
  bool empty = false;      // no usable point: the axes are a default range
  double budget = -1;      // plain double: GCC 12 misjudges optional
  bool has_budget = false;
  bool budget_drawn = false;
  double px(double t) const { return kLeft + ax.frac(t) * kWidth; }
  double py(double m) const { return kTop + kHeight - ay.frac(m) * kHeight; }
};

constexpr double kXEnd = kLeft + kWidth, kYEnd = kTop + kHeight;  // the plot area's right and bottom edges

Frame frame_for(const PlotSpec& spec) {
  Frame f;
  // Data range over everything drawn; an empty plot gets 0-100 ms by 0-1 GiB.
  double tmin = INFINITY, tmax = -INFINITY, mmax = 0, tpos = INFINITY, mpos = INFINITY;
  auto see = [&](const PlotPoint& p) {
    if (!usable(p)) return;
    tmin = std::min(tmin, p.time_s);
    tmax = std::max(tmax, p.time_s);
    mmax = std::max(mmax, p.memory_bytes);
    if (p.time_s > 0) tpos = std::min(tpos, p.time_s);
    if (p.memory_bytes > 0) mpos = std::min(mpos, p.memory_bytes);
  };
  for (const PlotCurve& c : spec.curves) std::for_each(c.points.begin(), c.points.end(), see);
  for (const PlotMarker& m : spec.markers) see(m.point);
  if (spec.chosen) see(*spec.chosen);
  f.empty = tmin > tmax;
  if (f.empty) tmin = 0, tmax = 0.1, mmax = 1024.0 * 1024 * 1024;
  f.budget = spec.memory_budget_bytes.value_or(-1);
  f.has_budget = usable_value(f.budget);
  // A budget far above every point would squash the data into the bottom of the chart: then it is
  // named in the legend only.
  f.budget_drawn = f.has_budget && (f.empty || f.budget <= 2 * mmax);
  if (f.budget_drawn) mmax = std::max(mmax, f.budget);
  const std::vector<Unit> seconds = {{1e-6, "µs"}, {1e-3, "ms"}, {1, "s"}};
  const std::vector<Unit> bytes = {{1, "B"}, {1024.0, "KiB"}, {1024.0 * 1024, "MiB"}, {1024.0 * 1024 * 1024, "GiB"}};
  // A zero anywhere keeps an axis linear (a log axis has no 0 to show it at).
  const bool log_time = !f.empty && tmin > 0 && tmax > kLogSpan * tpos;
  const bool log_memory = !f.empty && mpos < INFINITY && mmax > kLogSpan * mpos && (!f.budget_drawn || f.budget > 0);
  f.ax = log_time ? make_log_axis(tpos, tmax, seconds) : make_axis(tmin, tmax, false, seconds);
  f.ay = log_memory ? make_log_axis(mpos, mmax, bytes) : make_axis(0, mmax, true, bytes);
  return f;
}

bool has_chosen(const PlotSpec& spec) { return spec.chosen && usable(*spec.chosen); }

constexpr double kLegendX = kLeft + kWidth + 24;  // the legend's symbol column

// The legend's rows: curves, then baselines, chosen point and budget.
std::vector<LegendRow> legend_rows(const PlotSpec& spec, const Frame& f) {
  using Symbol = LegendRow::Symbol;
  std::vector<LegendRow> legend;
  for (size_t c = 0; c < spec.curves.size(); ++c) legend.push_back({Symbol::Curve, c, spec.curves[c].label});
  const MarkerKinds kinds = marker_kinds(spec);
  // With several GPU counts, the colour of a kind's shapes is its GPU count's: say so.
  const bool coloured = std::any_of(spec.markers.begin(), spec.markers.end(), [&](const PlotMarker& m) { return m.curve != spec.markers.front().curve; });
  if (!spec.markers.empty()) legend.push_back({Symbol::None, 0, coloured ? "baselines (colour: GPU count)" : "baselines", 6, "#666666"});
  for (size_t k = 0; k < kinds.names.size(); ++k) legend.push_back({Symbol::Marker, k, kinds.names[k]});
  if (has_chosen(spec)) legend.push_back({Symbol::Chosen, 0, "chosen for the budget"});
  if (f.budget_drawn) legend.push_back({Symbol::Budget, 0, "memory budget"});
  else if (f.has_budget) legend.push_back({Symbol::None, 0, "memory budget " + bytes_human(f.budget) + ", above the chart"});
  return legend;
}

// The <svg> opening tag, background and title. The canvas is as wide as the widest text (legend
// rows and title) needs.
std::string draw_canvas(const PlotSpec& spec, const std::vector<LegendRow>& legend) {
  double right = std::max(kLegendX + kLegendW, kLeft + text_width(spec.title, 16));
  double bottom = kTop + kHeight + kBottom;
  double row_y = kTop + 10;  // the symbol's centre; text baseline 4 below
  for (const LegendRow& r : legend) {
    right = std::max(right, kLegendX + r.text_x() + text_width(r.label, 12));
    bottom = std::max(bottom, (row_y += r.space_before) + 24);
    row_y += 22;
  }
  const double canvas_w = std::ceil(right + kMargin), canvas_h = std::ceil(bottom);

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(canvas_w, 0) + "\" height=\"" +
                  num(canvas_h, 0) + "\" viewBox=\"0 0 " + num(canvas_w, 0) + " " + num(canvas_h, 0) +
                  "\" font-family=\"sans-serif\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += text(kLeft, 28, spec.title, 16, "start", " font-weight=\"bold\"");
  return s;
}

// Grid lines and tick labels.
std::string draw_grid(const Frame& f) {
  const Axis& ax = f.ax;
  const Axis& ay = f.ay;
  std::string s;
  const std::string grid = "class=\"grid\" stroke=\"#e4e4e4\"";
  for (double v : ax.ticks) {
    const double x = kLeft + ax.frac(v * ax.unit.factor) * kWidth;
    s += line(x, kTop, x, kYEnd + 5, grid);
    s += text(x, kYEnd + 20, num(v, ax.decimals_of(v)), 12, "middle", " class=\"tick-x\"");
  }
  for (double v : ay.ticks) {
    const double y = kYEnd - ay.frac(v * ay.unit.factor) * kHeight;
    s += line(kLeft - 5, y, kXEnd, y, grid);
    s += text(kLeft - 9, y + 4, num(v, ay.decimals_of(v)), 12, "end", " class=\"tick-y\"");
  }
  return s;
}

// The plot area's border, the axis titles, and the note on an empty plot.
std::string draw_axes(const Frame& f) {
  std::string s = "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kWidth) + "\" height=\"" + num(kHeight) +
                  "\" fill=\"none\" stroke=\"#444444\"/>\n";
  s += text(kLeft + kWidth / 2, kYEnd + 44, std::string("time per step (") + f.ax.unit.name + (f.ax.log ? ", log scale)" : ")"), 13, "middle");
  s += text(22, kTop + kHeight / 2, std::string("memory per GPU (") + f.ay.unit.name + (f.ay.log ? ", log scale)" : ")"), 13, "middle",
            " transform=\"rotate(-90 22 " + num(kTop + kHeight / 2) + ")\"");
  if (f.empty) s += text(kLeft + kWidth / 2, kTop + kHeight / 2, "no strategies to plot", 14, "middle", " fill=\"#666666\"");
  return s;
}

// Everything drawn on the plot leaves a box; a baseline's label goes beside it only if it hits none.
using Taken = std::vector<Box>;
void take(Taken& taken, double x, double y, double r) { taken.push_back({x - r, y - r, x + r, y + r}); }

std::string draw_budget(const Frame& f, Taken& taken) {
  if (!f.budget_drawn) return "";
  double y = f.py(f.budget);
  std::string label = "memory budget " + bytes_human(f.budget);
  std::string s = line(kLeft, y, kXEnd, y, "class=\"budget\" " + kBudgetStroke);
  s += text(kXEnd - 6, y - 5, label, 11, "end", " fill=\"#444444\"");
  taken.push_back({kXEnd - 6 - text_width(label, 11), y - 15, kXEnd - 6, y - 2});
  taken.push_back({kLeft, y - 1, kXEnd, y + 1});
  return s;
}

// Frontiers: a staircase (right at the old memory, then down) and a dot per point.
std::string draw_series(const PlotSpec& spec, const Frame& f, Taken& taken) {
  std::string s;
  for (size_t c = 0; c < spec.curves.size(); ++c) {
    std::vector<PlotPoint> pts;
    for (const PlotPoint& p : spec.curves[c].points)
      if (usable(p)) pts.push_back(p);
    if (pts.empty()) continue;
    std::stable_sort(pts.begin(), pts.end(), [](const PlotPoint& a, const PlotPoint& b) { return a.time_s < b.time_s; });
    const char* col = colour(static_cast<int>(c), spec.curves.size());
    double x = f.px(pts[0].time_s), y = f.py(pts[0].memory_bytes);
    std::string d = "M";  // then appended: "M" + num(x) trips GCC 12's false -Wrestrict at -O3
    d += num(x) + " " + num(y);
    for (size_t i = 1; i < pts.size(); ++i) {
      double x2 = f.px(pts[i].time_s), y2 = f.py(pts[i].memory_bytes);
      d += " H" + num(x2) + " V" + num(y2);
      taken.push_back({x, y - 1, x2, y + 1});
      taken.push_back({x2 - 1, std::min(y, y2), x2 + 1, std::max(y, y2)});
      x = x2, y = y2;
    }
    s += "<path class=\"frontier\" d=\"" + d + "\" fill=\"none\" stroke=\"" + col + "\" stroke-width=\"2\"/>\n";
    for (const PlotPoint& p : pts) {
      s += circle(f.px(p.time_s), f.py(p.memory_bytes), 3.5, "class=\"point\" fill=\"" + std::string(col) + "\"");
      take(taken, f.px(p.time_s), f.py(p.memory_bytes), 4);
    }
  }
  return s;
}

std::string draw_chosen(const PlotSpec& spec, const Frame& f, Taken& taken) {
  if (!has_chosen(spec)) return "";
  double x = f.px(spec.chosen->time_s), y = f.py(spec.chosen->memory_bytes);
  take(taken, x, y, 12);
  return circle(x, y, 10, "class=\"chosen\" " + kChosenStroke);
}

// The baselines' markers, then their labels where one fits.
std::string draw_markers(const PlotSpec& spec, const Frame& f, Taken& taken) {
  const MarkerKinds kinds = marker_kinds(spec);
  std::string s;
  for (size_t i = 0; i < spec.markers.size(); ++i) {
    const PlotMarker& m = spec.markers[i];
    if (!usable(m.point)) continue;
    s += polygon("marker", kinds.of[i], f.px(m.point.time_s), f.py(m.point.memory_bytes), colour(m.curve, spec.curves.size()));
    take(taken, f.px(m.point.time_s), f.py(m.point.memory_bytes), 8);
  }
  for (const PlotMarker& m : spec.markers) {
    if (!usable(m.point)) continue;
    double x = f.px(m.point.time_s), y = f.py(m.point.memory_bytes);
    double w = text_width(m.label, 11);
    // Right, left, above, below: the first spot that is free.
    const Box spots[] = {{x + 10, y - 7, x + 10 + w, y + 6}, {x - 10 - w, y - 7, x - 10, y + 6},
                         {x - w / 2, y - 23, x + w / 2, y - 10}, {x - w / 2, y + 10, x + w / 2, y + 23}};
    const char* anchors[] = {"start", "end", "middle", "middle"};
    for (int k = 0; k < 4; ++k) {
      const Box& b = spots[k];
      if (b.x0 < kLeft || b.x1 > kXEnd || b.y0 < kTop || b.y1 > kYEnd) continue;
      if (std::any_of(taken.begin(), taken.end(), [&](const Box& t) { return t.overlaps(b); })) continue;
      taken.push_back(b);
      s += text(k == 0 ? b.x0 : k == 1 ? b.x1 : x, b.y1 - 2, m.label, 11, anchors[k], " fill=\"#222222\"");
      break;
    }
  }
  return s;
}

std::string draw_legend(const PlotSpec& spec, const std::vector<LegendRow>& legend) {
  using Symbol = LegendRow::Symbol;
  const MarkerKinds kinds = marker_kinds(spec);
  const double lx = kLegendX;
  std::string s = "<g class=\"legend\">\n";
  double y = kTop + 10;
  for (const LegendRow& r : legend) {
    y += r.space_before;
    switch (r.symbol) {
      case Symbol::None: break;
      case Symbol::Curve: {
        const std::string col = colour(static_cast<int>(r.index), spec.curves.size());
        s += line(lx, y, lx + 26, y, "stroke=\"" + col + "\" stroke-width=\"2\"");
        s += circle(lx + 13, y, 3.5, "fill=\"" + col + "\"");
        break;
      }
      case Symbol::Marker: {
        // A kind's colour where all its shapes share one, else white (the colours are the counts').
        const char* fill = nullptr;
        for (size_t i = 0; i < spec.markers.size(); ++i) {
          if (kinds.of[i] != r.index) continue;
          const char* c = colour(spec.markers[i].curve, spec.curves.size());
          fill = !fill || std::string(fill) == c ? c : "#ffffff";
        }
        s += polygon("legend-marker", r.index, lx + 13, y, fill ? fill : "#ffffff");
        break;
      }
      case Symbol::Chosen: s += circle(lx + 13, y, 8, kChosenStroke); break;
      case Symbol::Budget: s += line(lx, y, lx + 26, y, kBudgetStroke); break;
    }
    s += text(lx + r.text_x(), y + 4, r.label, 12, "start", r.fill ? std::string(" fill=\"") + r.fill + "\"" : "");
    y += 22;
  }
  return s + "</g>\n";
}

}  // namespace

std::string render_svg(const PlotSpec& spec) {
  const Frame f = frame_for(spec);
  // Legend first, to size the canvas.
  const std::vector<LegendRow> legend = legend_rows(spec, f);
  std::string s = draw_canvas(spec, legend);
  s += draw_grid(f);
  s += draw_axes(f);
  Taken taken;
  s += draw_budget(f, taken);
  s += draw_series(spec, f, taken);
  s += draw_chosen(spec, f, taken);
  s += draw_markers(spec, f, taken);
  s += draw_legend(spec, legend);
  return s + "</svg>\n";
}

void write_svg(const PlotSpec& spec, const std::string& path) {
  std::string svg = render_svg(spec);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError("cannot write plot file '" + path + "'");
  f.write(svg.data(), static_cast<std::streamsize>(svg.size()));
  f.close();
  if (!f) throw InputError("cannot write plot file '" + path + "' (write failed)");
}

}  // namespace tensoropt::cli
