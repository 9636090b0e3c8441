#include "cli/cdf_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tensoropt::cli {
namespace {

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"};

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string label_of(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%g s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%g min", s / 60);
  else std::snprintf(buf, sizeof buf, "%g h", s / 3600);
  return buf;
}

}  // namespace

std::string cdf_svg(const std::string& title, const std::vector<CdfCurve>& curves) {
  constexpr double kLeft = 70, kTop = 40, kWidth = 560, kHeight = 320;
  std::vector<std::vector<double>> sorted;
  double lo = INFINITY, hi = 0;
  for (const CdfCurve& c : curves) {
    std::vector<double> v;
    for (double x : c.values)
      if (std::isfinite(x) && x > 0) v.push_back(x);
    std::sort(v.begin(), v.end());
    if (!v.empty()) {
      lo = std::min(lo, v.front());
      hi = std::max(hi, v.back());
    }
    sorted.push_back(std::move(v));
  }
  if (!(hi > 0)) lo = 1, hi = 10;
  const bool log = hi / lo > 10;
  const double x0 = log ? std::log10(lo) : 0, x1 = log ? std::log10(hi) : hi;
  const auto x_of = [&](double s) { return kLeft + kWidth * ((log ? std::log10(s) : s) - x0) / std::max(x1 - x0, 1e-12); };
  const auto y_of = [&](double f) { return kTop + kHeight * (1 - f); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLeft + kWidth + 260 << "\" height=\"" << kTop + kHeight + 60
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\">" << escaped(title) << "</text>\n";
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double f = i / 4.0;
    o << "<g class=\"tick-y\"><line x1=\"" << kLeft - 4 << "\" x2=\"" << kLeft << "\" y1=\"" << y_of(f) << "\" y2=\"" << y_of(f)
      << "\" stroke=\"#444\"/><text x=\"" << kLeft - 8 << "\" y=\"" << y_of(f) + 4 << "\" text-anchor=\"end\">" << f << "</text></g>\n";
  }
  // Ticks at round durations (seconds, minutes, hours, days), at most 8: every second or third
  // one of the round durations within the range when there are more.
  std::vector<double> round;
  for (double unit : {1.0, 60.0, 3600.0, 86400.0})
    for (double m : {1.0, 2.0, 5.0, 10.0, 20.0, 30.0})
      if (unit == 1.0 || m * unit < 60 * 3600 * 24 * 30) round.push_back(m * unit);
  for (double sub : {0.1, 0.2, 0.5}) round.push_back(sub);
  std::sort(round.begin(), round.end());
  round.erase(std::unique(round.begin(), round.end()), round.end());
  std::vector<double> ticks;
  for (double t : round)
    if (t >= (log ? lo : 0) * 0.9999 && t <= hi * 1.0001) ticks.push_back(t);
  if (!log) {
    ticks.clear();
    for (double t : round)
      if (t >= hi / 6) {
        for (double k = 0; k * t <= hi * 1.0001; ++k) ticks.push_back(k * t);
        break;
      }
  }
  while (ticks.size() > 8) {
    std::vector<double> fewer;
    for (size_t i = 0; i < ticks.size(); i += 2) fewer.push_back(ticks[i]);
    ticks = fewer;
  }
  for (double t : ticks)
    o << "<g class=\"tick-x\"><line x1=\"" << x_of(t) << "\" x2=\"" << x_of(t) << "\" y1=\"" << kTop + kHeight << "\" y2=\"" << kTop + kHeight + 4
      << "\" stroke=\"#444\"/><text x=\"" << x_of(t) << "\" y=\"" << kTop + kHeight + 18 << "\" text-anchor=\"middle\">" << label_of(t) << "</text></g>\n";
  o << "<text x=\"" << kLeft + kWidth / 2 << "\" y=\"" << kTop + kHeight + 40 << "\" text-anchor=\"middle\">job completion time"
    << (log ? " (log scale)" : "") << "</text>\n";
  o << "<text x=\"18\" y=\"" << kTop + kHeight / 2 << "\" transform=\"rotate(-90 18 " << kTop + kHeight / 2
    << ")\" text-anchor=\"middle\">fraction of jobs done</text>\n";
  for (size_t c = 0; c < curves.size(); ++c) {
    const char* colour = kColours[c % 7];
    const std::vector<double>& v = sorted[c];
    std::ostringstream d;
    const double n = static_cast<double>(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (i == 0) d << "M" << x_of(v[i]) << " " << y_of(0);
      else d << "H" << x_of(v[i]);
      d << " V" << y_of((static_cast<double>(i) + 1) / n) << " ";
    }
    o << "<path class=\"cdf\" d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n";
    const double ly = kTop + 10 + 20 * static_cast<double>(c);
    o << "<g class=\"legend\"><line x1=\"" << kLeft + kWidth + 20 << "\" x2=\"" << kLeft + kWidth + 44 << "\" y1=\"" << ly << "\" y2=\"" << ly
      << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/><text x=\"" << kLeft + kWidth + 50 << "\" y=\"" << ly + 4 << "\">" << escaped(curves[c].label)
      << "</text></g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace tensoropt::cli
