// The training log: CSV rows, the SVG reward plot, the progress line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/xml.h"
#include "trainer.h"

namespace placer {

const char* const kCsvHeader =
    "update,samples,elapsed_s,reward_mean,step_mean_s,best_step_s,entropy,loss,lr,noise,samples_per_s,cache_hits,task";

std::string csv_row(const LogRow& r) {
  char b[512];
  std::snprintf(b, sizeof b, "%lld,%lld,%.3f,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%.6g,%.3f,%lld,%d",
                static_cast<long long>(r.update), static_cast<long long>(r.samples), r.elapsed_s, r.reward_mean,
                r.step_mean_s, r.best_step_s, r.entropy, r.loss, r.lr, r.noise, r.samples_per_s,
                static_cast<long long>(r.cache_hits), r.task);
  return b;
}

std::vector<LogRow> read_csv(const std::string& path, int64_t max_update) {
  std::vector<LogRow> rows;
  std::ifstream in(path);
  if (!in) return rows;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 || line.empty()) continue;
    LogRow r;
    long long u, s, c;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lld,%d", &u, &s, &r.elapsed_s,
                    &r.reward_mean, &r.step_mean_s, &r.best_step_s, &r.entropy, &r.loss, &r.lr, &r.noise,
                    &r.samples_per_s, &c, &r.task) != 13)
      throw InputError(path + ": line " + std::to_string(lineno) + ": malformed training log row");
    r.update = u;
    r.samples = s;
    r.cache_hits = c;
    if (r.update <= max_update) rows.push_back(r);
  }
  return rows;
}

namespace {

std::string duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char b[64];
  const long long t = static_cast<long long>(s + 0.5);
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%lldh%02lldm", t / 3600, (t / 60) % 60);
  else if (t >= 60)
    std::snprintf(b, sizeof b, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%llds", t);
  return b;
}

// One panel: series of (x, y) polylines with axis labels.
void panel(std::ostringstream& o, double x0, double y0, double w, double h, const std::string& title,
           const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& series,
           const std::vector<std::string>& colors, const std::string& xlabel) {
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto& s : series)
    for (auto [x, y] : s.second) {
      if (!std::isfinite(y)) continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (xmin > xmax) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax == ymin) ymax = ymin + std::max(1e-9, std::abs(ymin) * 0.01);
  const double pad = (ymax - ymin) * 0.05;
  ymin -= pad, ymax += pad;
  auto X = [&](double x) { return x0 + (x - xmin) / (xmax - xmin) * w; };
  auto Y = [&](double y) { return y0 + h - (y - ymin) / (ymax - ymin) * h; };
  o << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h << "' fill='none' stroke='#888'/>\n";
  o << "<text x='" << x0 << "' y='" << y0 - 8 << "' font-size='14'>" << xml_escape(title) << "</text>\n";
  o << "<text x='" << x0 + w / 2 << "' y='" << y0 + h + 32 << "' font-size='12' text-anchor='middle'>"
    << xml_escape(xlabel) << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    const double yv = ymin + (ymax - ymin) * i / 4, xv = xmin + (xmax - xmin) * i / 4;
    o << "<text x='" << x0 - 6 << "' y='" << Y(yv) + 4 << "' font-size='11' text-anchor='end'>"
      << format_number("%.4g", yv) << "</text>\n";
    o << "<text x='" << X(xv) << "' y='" << y0 + h + 16 << "' font-size='11' text-anchor='middle'>"
      << format_number("%.4g", xv) << "</text>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    o << "<polyline fill='none' stroke='" << colors[k % colors.size()] << "' stroke-width='1.5' points='";
    for (auto [x, y] : series[k].second)
      if (std::isfinite(y)) o << format_number("%.2f", X(x)) << "," << format_number("%.2f", Y(y)) << " ";
    o << "'/>\n";
    o << "<text x='" << x0 + w - 4 << "' y='" << y0 + 16 + 14 * k << "' font-size='12' text-anchor='end' fill='"
      << colors[k % colors.size()] << "'>" << xml_escape(series[k].first) << "</text>\n";
  }
}

}  // namespace

std::string reward_svg(const std::vector<LogRow>& rows, const std::string& title, double lower_bound_s,
                       double reference_s, const std::string& reference_name) {
  std::vector<std::pair<double, double>> reward, best, lb, ref;
  for (const auto& r : rows) {
    reward.push_back({static_cast<double>(r.samples), r.reward_mean});
    best.push_back({static_cast<double>(r.samples), r.best_step_s});
    if (lower_bound_s > 0) lb.push_back({static_cast<double>(r.samples), lower_bound_s});
    if (reference_s > 0) ref.push_back({static_cast<double>(r.samples), reference_s});
  }
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='900' height='420' font-family='sans-serif'>\n";
  o << "<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='450' y='22' font-size='16' text-anchor='middle'>" << xml_escape(title) << "</text>\n";
  panel(o, 70, 60, 340, 290, "mean reward per update", {{"reward", reward}}, {"#1f77b4"}, "sampled placements");
  std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> s = {{"best step (s)", best}};
  std::vector<std::string> colors = {"#d62728"};
  if (!ref.empty()) s.push_back({reference_name, ref}), colors.push_back("#2ca02c");
  if (!lb.empty()) s.push_back({"lower bound", lb}), colors.push_back("#7f7f7f");
  panel(o, 530, 60, 340, 290, "best step time (s)", s, colors, "sampled placements");
  o << "</svg>\n";
  return o.str();
}

std::string progress_line(const LogRow& r, int64_t total_updates, double eta_s) {
  char b[256];
  std::snprintf(b, sizeof b, "update %lld/%lld | %.1f samples/s | step %.4g s | best %.4g s | entropy %.3f | ETA %s",
                static_cast<long long>(r.update), static_cast<long long>(total_updates), r.samples_per_s, r.step_mean_s,
                r.best_step_s, r.entropy, duration(eta_s).c_str());
  return b;
}

}  // namespace placer
