// The frontier plot: SVG structure, one staircase per curve, legend, escaping, nice ticks,
// degenerate inputs, every text inside the canvas, determinism and the write error.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

#include "cli/plot_svg.h"
#include "graph/error.h"

namespace tensoropt::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
  return n;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The text of every <text class="cls" ...>VALUE</text>, parsed as numbers.
std::vector<double> ticks(const std::string& svg, const std::string& cls) {
  std::vector<double> out;
  const std::string key = "class=\"" + cls + "\"";
  for (size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
    size_t open = svg.find('>', at), close = svg.find('<', open);
    out.push_back(std::stod(svg.substr(open + 1, close - open - 1)));
  }
  return out;
}

// Ticks are evenly spaced by 1, 2 or 5 times a power of ten, and every tick is a multiple of it.
void check_nice(const std::vector<double>& t) {
  REQUIRE(t.size() >= 2);
  double step = t[1] - t[0];
  REQUIRE(step > 0);
  for (size_t i = 1; i < t.size(); ++i) CHECK(t[i] - t[i - 1] == doctest::Approx(step));
  double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  CHECK((mantissa == doctest::Approx(1) || mantissa == doctest::Approx(2) || mantissa == doctest::Approx(5)));
  for (double v : t) CHECK(std::fabs(v / step - std::round(v / step)) < 1e-6);
}

void check_document(const std::string& svg) {
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.size() >= 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  std::string lower = svg;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK_FALSE(has(lower, "nan"));
  CHECK_FALSE(has(lower, "inf"));
}

// The d attribute of every frontier path.
std::vector<std::string> frontier_paths(const std::string& svg) {
  std::vector<std::string> out;
  const std::string key = "class=\"frontier\" d=\"";
  for (size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
    size_t from = at + key.size();
    out.push_back(svg.substr(from, svg.find('"', from) - from));
  }
  return out;
}

// The value of attribute `name` in the tag starting at `tag` ("" when absent).
std::string attribute(const std::string& svg, size_t tag, const std::string& name) {
  size_t end = svg.find('>', tag), at = svg.find(" " + name + "=\"", tag);
  if (at == std::string::npos || at > end) return "";
  size_t from = at + name.size() + 3;
  return svg.substr(from, svg.find('"', from) - from);
}

std::string unescape(std::string s) {
  for (auto [entity, c] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}})
    for (size_t at = s.find(entity); at != std::string::npos; at = s.find(entity, at + 1)) s.replace(at, std::strlen(entity), c);
  return s;
}

// Every unrotated <text> spans, by its anchor and text_width, a range inside [0, canvas width].
void check_texts_inside(const std::string& svg) {
  const double canvas = std::stod(attribute(svg, 0, "width"));
  size_t n = 0;
  for (size_t at = svg.find("<text "); at != std::string::npos; at = svg.find("<text ", at + 1), ++n) {
    if (!attribute(svg, at, "transform").empty()) continue;
    size_t open = svg.find('>', at);
    std::string content = unescape(svg.substr(open + 1, svg.find("</text>", open) - open - 1));
    double x = std::stod(attribute(svg, at, "x")), w = text_width(content, std::stod(attribute(svg, at, "font-size")));
    std::string anchor = attribute(svg, at, "text-anchor");
    double left = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
    CAPTURE(content);
    CHECK(left >= 0);
    CHECK(left + w <= canvas);
  }
  CHECK(n > 10);
}

PlotSpec example() {
  PlotSpec s;
  s.title = "gpt2_small.onnx, batch 8, h100-sxm";
  s.curves = {{"4 GPUs", {{0.210, 30 * kGiB}, {0.260, 18 * kGiB}, {0.340, 12 * kGiB}}},
              {"8 GPUs", {{0.120, 22 * kGiB}, {0.150, 11 * kGiB}, {0.200, 7 * kGiB}, {0.290, 5 * kGiB}}}};
  s.markers = {{"pure DP (4 GPUs)", "", {0.230, 34 * kGiB}, 0}, {"pure DP (8 GPUs)", "", {0.130, 33 * kGiB}, 1}};
  s.chosen = PlotPoint{0.150, 11 * kGiB};
  s.memory_budget_bytes = 16 * kGiB;
  return s;
}

TEST_CASE("plot svg: a complete document with one dot per point and one shape per marker") {
  std::string svg = render_svg(example());
  check_document(svg);
  CHECK(count(svg, "class=\"point\"") == 7);
  CHECK(count(svg, "class=\"marker\"") == 2);
  CHECK(count(svg, "class=\"legend-marker\"") == 2);
  CHECK(count(svg, "class=\"chosen\"") == 1);
  CHECK(has(svg, "time per step (ms)"));
  CHECK(has(svg, "memory per GPU (GiB)"));
}

TEST_CASE("plot svg: one staircase per non-empty curve, right then down, in time order") {
  PlotSpec s;
  s.curves = {{"a", {{0.3, 2 * kGiB}, {0.1, 8 * kGiB}, {0.2, 4 * kGiB}}},  // unsorted on purpose
              {"empty", {}},
              {"one", {{0.25, 3 * kGiB}}}};
  std::string svg = render_svg(s);
  std::vector<std::string> paths = frontier_paths(svg);
  REQUIRE(paths.size() == 2);
  // "Mx0 y0 Hx1 Vy1 Hx2 Vy2": x grows along the path and y (down the page) grows as memory falls.
  double x0, y0, x1, y1, x2, y2;
  char m, h1, v1, h2, v2;
  std::istringstream in(paths[0]);
  in >> m >> x0 >> y0 >> h1 >> x1 >> v1 >> y1 >> h2 >> x2 >> v2 >> y2;
  REQUIRE(in);
  CHECK(std::string{m, h1, v1, h2, v2} == "MHVHV");
  CHECK(x0 < x1);
  CHECK(x1 < x2);
  CHECK(y0 < y1);
  CHECK(y1 < y2);
  CHECK(x2 - x1 == doctest::Approx(x1 - x0).epsilon(0.01));  // 0.1 s apart both times
  CHECK(paths[1].find('H') == std::string::npos);             // one point: nothing to step to
  CHECK(count(svg, "class=\"point\"") == 4);
}

TEST_CASE("plot svg: the legend lists every curve, every baseline, the chosen point and the budget") {
  PlotSpec s = example();
  s.curves.push_back({"16 GPUs", {}});  // no feasible strategy: still named
  s.markers.push_back({"pipeline only", "", {std::nan(""), 1}, -1});
  std::string svg = render_svg(s);
  std::string legend = svg.substr(svg.find("<g class=\"legend\">"));
  for (const char* label : {"4 GPUs", "8 GPUs", "16 GPUs", "pure DP (4 GPUs)", "pure DP (8 GPUs)", "pipeline only",
                            "chosen for the budget", "memory budget"})
    CHECK_MESSAGE(has(legend, std::string(">") + label + "</text>"), label);
  CHECK(count(svg, "class=\"marker\"") == 2);  // the NaN baseline has no shape on the plot
  CHECK(count(svg, "class=\"legend-marker\"") == 3);
}

TEST_CASE("plot svg: 1 to 64 GPUs on log axes, baselines one legend row per kind") {
  // As plan --gpus 1-64 --baselines gives it: times from 2 s to 40 ms, memory from 60 GiB to
  // 1 GiB, three baselines at each of seven counts.
  PlotSpec s;
  const char* kinds[] = {"data parallel", "ZeRO-2", "Megatron TP"};
  for (int c = 0; c < 7; ++c) {
    const int gpus = 1 << c;
    const double t = 2.0 / gpus, m = 60 * kGiB / gpus;
    s.curves.push_back({std::to_string(gpus) + " GPUs", {{t, m}, {1.2 * t, 0.8 * m}}});
    for (int k = 0; k < 3; ++k)
      s.markers.push_back({std::string(kinds[k]) + " (" + std::to_string(gpus) + " GPUs)", kinds[k], {t * (1.1 + 0.1 * k), m * 1.05}, c});
  }
  const std::string svg = render_svg(s);
  check_document(svg);
  check_texts_inside(svg);
  CHECK(has(svg, "time per step (s, log scale)"));
  CHECK(has(svg, "memory per GPU (GiB, log scale)"));
  // Ticks at 1-2-5 times powers of ten, spanning the data, evenly spaced in log.
  for (const char* cls : {"tick-x", "tick-y"}) {
    CAPTURE(cls);
    const std::vector<double> t = ticks(svg, cls);
    REQUIRE(t.size() >= 3);
    CHECK(t.size() <= 12);
    for (double v : t) {
      const double mantissa = v / std::pow(10.0, std::floor(std::log10(v) + 1e-9));
      CHECK((mantissa == doctest::Approx(1) || mantissa == doctest::Approx(2) || mantissa == doctest::Approx(5)));
    }
    CHECK(t.back() / t.front() > 30);
  }
  const std::vector<double> x = ticks(svg, "tick-x");
  CHECK(x.front() <= 0.03125);  // 64 GPUs: 2 s / 64
  CHECK(x.back() >= 2.4);
  CHECK(count(svg, "class=\"marker\"") == 21);
  CHECK(count(svg, "class=\"legend-marker\"") == 3);
  const std::string legend = svg.substr(svg.find("<g class=\"legend\">"));
  for (const char* k : kinds) CHECK(has(legend, std::string(">") + k + "</text>"));
  CHECK(has(legend, "baselines (colour: GPU count)"));
  CHECK_FALSE(has(legend, "(64 GPUs)</text>"));
  // The 64-GPU curve is not squeezed: its two points lie far apart on the page.
  const std::vector<std::string> paths = frontier_paths(svg);
  REQUIRE(paths.size() == 7);
  double x0, y0, x1;
  char m, h;
  std::istringstream in(paths[6]);
  in >> m >> x0 >> y0 >> h >> x1;
  CHECK(x1 - x0 > 10);
}

TEST_CASE("plot svg: labels and title are XML-escaped") {
  PlotSpec s = example();
  s.title = "model <v2> & 'x'";
  s.curves[0].label = "a<b & \"c\"";
  s.markers[0].label = "DP<&>";
  std::string svg = render_svg(s);
  check_document(svg);
  CHECK(has(svg, "model &lt;v2&gt; &amp; &apos;x&apos;"));
  CHECK(has(svg, "a&lt;b &amp; &quot;c&quot;"));
  CHECK(has(svg, "DP&lt;&amp;&gt;"));
  CHECK_FALSE(has(svg, "a<b"));
  CHECK_FALSE(has(svg, "<&"));
  CHECK_FALSE(has(svg, "& "));
}

TEST_CASE("plot svg: degenerate inputs give a valid document without nan or inf") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<PlotSpec> specs(7);
  specs[1].curves = {{"one", {{0.5, 4 * kGiB}}}};
  specs[2].curves = {{"same", {{0.5, 4 * kGiB}, {0.5, 4 * kGiB}, {0.5, 4 * kGiB}}}};
  specs[3].curves = {{"empty", {}}, {"also empty", {}}};
  specs[4].curves = {{"bad", {{nan, 1 * kGiB}, {0.2, inf}, {-inf, 2 * kGiB}, {0.3, -1}, {0.1, 3 * kGiB}}}};
  specs[4].chosen = PlotPoint{inf, nan};
  specs[4].memory_budget_bytes = nan;
  specs[4].markers = {{"huge", "", {std::numeric_limits<double>::max(), 1}, 0}};
  specs[5].curves = {{"zero", {{0, 0}}}};
  specs[6].curves = {{"too close to tell apart", {{1.0, 2 * kGiB}, {1.0 + 1e-15, 1 * kGiB}}}};
  for (size_t i = 0; i < specs.size(); ++i) {
    CAPTURE(i);
    std::string svg = render_svg(specs[i]);
    check_document(svg);
    check_nice(ticks(svg, "tick-x"));
    check_nice(ticks(svg, "tick-y"));
    CHECK(count(svg, "class=\"chosen\"") == 0);
    CHECK(count(svg, "class=\"budget\"") == 0);
  }
  CHECK(has(render_svg(specs[0]), "no strategies to plot"));
  CHECK(has(render_svg(specs[3]), "no strategies to plot"));
  CHECK(count(render_svg(specs[4]), "class=\"point\"") == 1);  // only (0.1 s, 3 GiB) survives
  CHECK(frontier_paths(render_svg(specs[4])).size() == 1);
  std::vector<double> x = ticks(render_svg(specs[1]), "tick-x");  // one point: the axis still spans it
  CHECK(x.front() <= 500);
  CHECK(x.back() >= 500);
}

TEST_CASE("plot svg: ticks are 1-2-5 numbers in human units covering the data") {
  SUBCASE("ms from 0, GiB from 0") {
    std::string svg = render_svg(example());
    std::vector<double> x = ticks(svg, "tick-x"), y = ticks(svg, "tick-y");
    check_nice(x);
    check_nice(y);
    CHECK(x.front() == 0);
    CHECK(x.back() >= 340);
    CHECK(x.size() <= 12);
    CHECK(y.front() == 0);
    CHECK(y.back() >= 34);
    CHECK(y.size() <= 12);
  }
  SUBCASE("seconds near 1, away from 0; MiB") {
    PlotSpec s;
    s.curves = {{"2 GPUs", {{1.00, 600.0 * 1024 * 1024}, {1.05, 300.0 * 1024 * 1024}}}};
    std::string svg = render_svg(s);
    CHECK(has(svg, "time per step (s)"));
    CHECK(has(svg, "memory per GPU (MiB)"));
    std::vector<double> x = ticks(svg, "tick-x"), y = ticks(svg, "tick-y");
    check_nice(x);
    check_nice(y);
    CHECK(x.front() > 0.9);
    CHECK(x.front() <= 1.0);
    CHECK(x.back() >= 1.05);
    CHECK(x.back() < 1.2);
    CHECK(y.front() == 0);
    CHECK(y.back() >= 600);
    CHECK(has(svg, ">1.02</text>"));  // two decimals for a step of 0.02
  }
}

TEST_CASE("plot svg: the budget line appears only when given, in view unless far above the data") {
  PlotSpec s = example();
  s.memory_budget_bytes.reset();
  CHECK(count(render_svg(s), "class=\"budget\"") == 0);
  CHECK_FALSE(has(render_svg(s), "memory budget"));
  double top = 0;
  for (const PlotCurve& c : s.curves)
    for (const PlotPoint& p : c.points) top = std::max(top, p.memory_bytes);
  s.memory_budget_bytes = 1.5 * top;  // above every point, within twice the data: drawn
  std::string svg = render_svg(s);
  CHECK(count(svg, "class=\"budget\"") == 1);
  CHECK(ticks(svg, "tick-y").back() * kGiB >= 1.5 * top);
  s.memory_budget_bytes = 10 * top;  // far above: named in the legend, the axis follows the data
  svg = render_svg(s);
  CHECK(count(svg, "class=\"budget\"") == 0);
  CHECK(has(svg, "above the chart"));
  CHECK(ticks(svg, "tick-y").back() * kGiB < 2.5 * top);
}

TEST_CASE("plot svg: text_width is at least DejaVu Sans's and DejaVu Sans Bold's width, and not much more") {
  // Advance widths at 12 px from the fonts' hmtx tables (regular, bold).
  const struct { const char* text; double regular, bold; } fonts[] = {
      {"memory budget 76.00 GiB, above the chart", 262.29, 292.73},
      {"chosen for the budget", 132.97, 150.25},
      {"8 GPUs", 43.02, 48.06},
      {"Wm@", 35.55, 37.74}};
  for (const auto& f : fonts) {
    CAPTURE(f.text);
    CHECK(text_width(f.text, 12) >= f.bold);
    CHECK(text_width(f.text, 12) >= f.regular);
    CHECK(text_width(f.text, 12) <= 1.01 * f.bold);
  }
  CHECK(text_width("ab", 24) == doctest::Approx(2 * text_width("ab", 12)));
  CHECK(text_width("\xc2\xb5s", 10) == doctest::Approx(10 + text_width("s", 10)));  // "µs": µ one em
  CHECK(text_width("", 12) == 0);
}

TEST_CASE("plot svg: no text runs past the canvas, however long the labels") {
  SUBCASE("the example") { check_texts_inside(render_svg(example())); }
  SUBCASE("a budget far above the chart, as plan draws it for GPT-2 small on 8 GPUs") {
    PlotSpec s;
    s.title = "models/gpt2_small.onnx, batch 8, h100-sxm";
    s.curves = {{"8 GPUs", {{0.03477, 2.77 * kGiB}, {0.0406, 2.54 * kGiB}}}};
    s.chosen = s.curves[0].points[0];
    s.memory_budget_bytes = 76 * kGiB;
    std::string svg = render_svg(s);
    REQUIRE(has(svg, "memory budget 76.00 GiB, above the chart"));
    check_texts_inside(svg);
  }
  SUBCASE("long labels of every kind, wide letters") {
    PlotSpec s = example();
    s.title = "/very/long/path/to/a/model/exported/by/someone/WWWWWWWWWWWWWWWWWWWWWWWWWWWW.onnx, batch 4096, h100-sxm";
    s.curves[0].label = "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM GPUs";
    s.markers[0].label = "Megatron TP8 x DP512 x ZeRO-2 with every WWWWW (4096 GPUs)";
    s.memory_budget_bytes = 1e6 * kGiB;
    check_texts_inside(render_svg(s));
  }
}

TEST_CASE("plot svg: same spec, same bytes") {
  PlotSpec a = example(), b = example();
  CHECK(render_svg(a) == render_svg(b));
  b.curves[1].points[0].time_s += 0.001;
  CHECK(render_svg(a) != render_svg(b));
}

TEST_CASE("plot svg: write_svg writes the document and names the path it cannot write") {
  auto dir = std::filesystem::temp_directory_path() / ("tensoropt_plot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string good = (dir / "plot.svg").string();
  write_svg(example(), good);
  std::ifstream f(good, std::ios::binary);
  std::ostringstream bytes;
  bytes << f.rdbuf();
  CHECK(bytes.str() == render_svg(example()));
  std::filesystem::remove_all(dir);

  std::string bad = (dir / "missing" / "plot.svg").string();
  try {
    write_svg(example(), bad);
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(has(e.what(), bad));
  }
}

}  // namespace
}  // namespace tensoropt::cli
