// Fidelity statistics, diverse placements and the report (JSON, markdown, SVG).
#include "placer/env/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"

namespace placer {
namespace {

void check_pair(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  if (a.size() != b.size() || a.size() < 2)
    throw InputError(std::string(what) + ": needs two samples of the same size >= 2, got " + std::to_string(a.size()) +
                     " and " + std::to_string(b.size()));
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  check_pair(a, b, "spearman");
  return pearson(ranks(a), ranks(b));
}

double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
  check_pair(a, b, "kendall");
  // O(n^2): fidelity sets hold tens to hundreds of points.
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0)
        ties_a += 1;
      else if (db == 0)
        ties_b += 1;
      else if ((da > 0) == (db > 0))
        concordant += 1;
      else
        discordant += 1;
    }
  const double denom = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denom > 0 ? (concordant - discordant) / denom : 0.0;
}

double mean_absolute_percentage_error(const std::vector<double>& actual, const std::vector<double>& predicted) {
  if (actual.size() != predicted.size()) throw InputError("mape: samples of different sizes");
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    if (actual[i] > 0) {
      sum += std::abs(predicted[i] - actual[i]) / actual[i];
      ++n;
    }
  return n ? sum / n : 0.0;
}

std::vector<std::pair<std::string, Placement>> diverse_placements(const Graph& graph, int32_t devices, int count,
                                                                  uint64_t seed) {
  if (devices < 1) throw InputError("diverse_placements: needs at least one device");
  if (count < 1) throw InputError("diverse_placements: count must be >= 1");
  const Grouping groups = colocation_groups(graph);
  const int32_t G = groups.size();
  // Groups in order of their first op, so "contiguous" follows the graph.
  std::vector<int32_t> order(G);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t x, int32_t y) { return groups.members[x].front() < groups.members[y].front(); });
  auto expand = [&](const std::vector<int32_t>& group_device) {
    Placement p;
    p.device_of.resize(graph.size());
    for (int32_t g = 0; g < G; ++g)
      for (OpId o : groups.members[g]) p.device_of[o.value] = DeviceId(group_device[g]);
    return p;
  };

  std::vector<std::pair<std::string, Placement>> out;
  std::vector<std::vector<int32_t>> bases;
  std::set<uint64_t> seen;
  auto add = [&](const std::string& kind, const std::vector<int32_t>& gd) {
    if (static_cast<int>(out.size()) >= count) return;
    Placement p = expand(gd);
    if (!seen.insert(placement_hash(p)).second) return;
    out.emplace_back(kind, std::move(p));
    bases.push_back(gd);
  };
  std::mt19937_64 rng(seed);
  for (int32_t d = 0; d < devices; ++d) add("single", std::vector<int32_t>(G, d));
  if (devices > 1) {
    std::vector<int32_t> rr(G);
    for (int32_t i = 0; i < G; ++i) rr[order[i]] = i % devices;
    add("round_robin", rr);
    // Contiguous splits: the first fraction on one device, the rest spread evenly.
    for (int cut = 1; cut <= 9; ++cut) {
      std::vector<int32_t> split(G);
      for (int32_t i = 0; i < G; ++i) {
        const double f = static_cast<double>(i) / G;
        const double first = cut / 10.0;
        split[order[i]] =
            f < first
                ? 0
                : 1 + std::min<int32_t>(devices - 2, static_cast<int32_t>((f - first) / (1 - first) * (devices - 1)));
      }
      add("split", split);
    }
    // Round robin in blocks of k groups.
    for (int k : {2, 4, 8, 16, 32}) {
      std::vector<int32_t> blocks(G);
      for (int32_t i = 0; i < G; ++i) blocks[order[i]] = (i / k) % devices;
      add("blocks", blocks);
    }
  }
  // Random and perturbed placements until `count` (bounded tries).
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 20 * count; ++tries) {
    if (devices == 1) break;
    if (tries % 2 == 0) {
      std::vector<int32_t> random(G);
      // Random with a bias to one device, so some are balanced and some lopsided.
      const double bias = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      for (int32_t g = 0; g < G; ++g)
        random[g] =
            std::uniform_real_distribution<double>(0.0, 1.0)(rng) < bias ? 0 : static_cast<int32_t>(rng() % devices);
      add("random", random);
    } else {
      std::vector<int32_t> base = bases[rng() % bases.size()];
      const double rate = std::vector<double>{0.02, 0.05, 0.1, 0.2}[rng() % 4];
      for (int32_t g = 0; g < G; ++g)
        if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < rate)
          base[g] = static_cast<int32_t>(rng() % devices);
      add("perturbed", base);
    }
  }
  return out;
}

void FidelityReport::compute_statistics() {
  std::vector<double> m, s;
  for (const auto& p : points) {
    m.push_back(p.measured_s);
    s.push_back(p.simulated_s);
  }
  if (m.size() >= 2) {
    spearman = placer::spearman(m, s);
    kendall = kendall_tau_b(m, s);
  }
  mape = mean_absolute_percentage_error(m, s);
  std::vector<double> r0, r1;
  for (const auto& p : points)
    if (p.rounds_s.size() >= 2) {
      r0.push_back(p.rounds_s[0]);
      r1.push_back(p.rounds_s[1]);
    }
  retest_spearman = r0.size() >= 2 && r0.size() == points.size() ? placer::spearman(r0, r1)
                                                                 : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace placer

namespace placer {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}
}  // namespace

FidelityReport FidelityReport::from_json(const std::string& text) {
  rj::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) throw InputError("fidelity report: not a JSON object");
  // "fidelity report: points[0].measured_s: expected a number, got \"x\""
  FieldReader<JsonNode> top(JsonNode(&doc), "", throw_field_error<InputError>("fidelity report"));
  auto number = [](FieldReader<JsonNode>& f, const char* key) { return f.number(f.need(key), f.path(key)); };
  FidelityReport r;
  r.graph = top.string(top.need("graph"), "graph");
  r.devices = top.string(top.need("devices"), "devices");
  r.command = top.string(top.need("command"), "command");
  r.host = top.string(top.need("host"), "host");
  r.ops = static_cast<int64_t>(number(top, "ops"));
  r.calibrated_fraction = number(top, "calibrated_fraction");
  r.per_op_overhead_s = number(top, "per_op_overhead_s");
  r.failed = static_cast<int>(number(top, "failed"));
  const JsonNode points = top.need("points");
  if (!points.is_list()) top.fail("points", "expected a list, got " + points.describe());
  for (size_t i = 0; i < points.size(); ++i) {
    FieldReader<JsonNode> pt(points.at(i), index_path("points", i), top.on_fail());
    if (!points.at(i).is_map()) top.fail(pt.path(), "expected an object, got " + points.at(i).describe());
    FidelityPoint p;
    p.kind = pt.string(pt.need("kind"), pt.path("kind"));
    p.measured_s = number(pt, "measured_s");
    p.measured_iqr_s = number(pt, "measured_iqr_s");
    p.simulated_s = number(pt, "simulated_s");
    p.transfer_bytes = static_cast<int64_t>(number(pt, "transfer_bytes"));
    const JsonNode rounds = pt.get("rounds_s");
    for (size_t k = 0; k < rounds.size(); ++k)
      if (const auto v = rounds.at(k).number()) p.rounds_s.push_back(*v);
    r.points.push_back(std::move(p));
  }
  if (r.points.size() < 2) throw InputError("fidelity report: needs at least two points");
  r.compute_statistics();
  return r;
}

std::string FidelityReport::to_json() const {
  std::ostringstream o;
  o << "{\n  \"graph\": " << json_quote(graph) << ",\n  \"ops\": " << ops << ",\n  \"devices\": " << json_quote(devices)
    << ",\n  \"command\": " << json_quote(command) << ",\n  \"host\": " << json_quote(host)
    << ",\n  \"calibrated_fraction\": " << format_number(calibrated_fraction)
    << ",\n  \"per_op_overhead_s\": " << format_number(per_op_overhead_s) << ",\n  \"placements\": " << points.size()
    << ",\n  \"failed\": " << failed << ",\n  \"spearman\": " << format_number(spearman)
    << ",\n  \"kendall_tau_b\": " << format_number(kendall) << ",\n  \"mape\": " << format_number(mape)
    << ",\n  \"retest_spearman\": "
    << (std::isnan(retest_spearman) ? std::string("null") : format_number(retest_spearman)) << ",\n  \"points\": [\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    o << "    {\"kind\": \"" << p.kind << "\", \"measured_s\": " << format_number(p.measured_s, 8)
      << ", \"measured_iqr_s\": " << format_number(p.measured_iqr_s, 8)
      << ", \"simulated_s\": " << format_number(p.simulated_s, 8) << ", \"transfer_bytes\": " << p.transfer_bytes
      << ", \"rounds_s\": [";
    for (size_t r = 0; r < p.rounds_s.size(); ++r) o << (r ? ", " : "") << format_number(p.rounds_s[r], 8);
    o << "]}" << (i + 1 < points.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
  return o.str();
}

std::string FidelityReport::to_markdown() const {
  std::ostringstream o;
  o << "# Simulator fidelity: " << graph << " on " << devices << "\n\n";
  o << "Command: `" << command << "`\n\n";
  o << "Host: " << host << "\n\n";
  o << "| graph | ops | placements | failed | Spearman | Kendall tau-b | MAPE | ops calibrated | executor overhead |\n";
  o << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  o << "| " << graph << " | " << ops << " | " << points.size() << " | " << failed << " | " << format_number(spearman, 3)
    << " | " << format_number(kendall, 3) << " | " << format_number(100 * mape, 3) << "% | "
    << format_number(100 * calibrated_fraction, 3) << "% | " << format_number(per_op_overhead_s * 1e6, 3)
    << " us/op |\n\n";
  o << "Goal: Spearman >= 0.9 and MAPE <= 10%: " << (spearman >= 0.9 && mape <= 0.10 ? "met" : "NOT met") << ".\n\n";
  if (!std::isnan(retest_spearman))
    o << "The measurement against itself (round 1 vs round 2 of the same placements): Spearman "
      << format_number(retest_spearman, 3)
      << ". A simulator cannot rank placements more reliably than the measurement does.\n\n";
  o << "| # | kind | measured s (IQR of its round) | simulated s | error | transfer MB "
       "|\n|---:|---|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    o << "| " << i << " | " << p.kind << " | " << format_number(p.measured_s, 4) << " ("
      << format_number(p.measured_iqr_s, 2) << ") | " << format_number(p.simulated_s, 4) << " | "
      << format_number(100 * (p.simulated_s - p.measured_s) / p.measured_s, 3) << "% | "
      << format_number(p.transfer_bytes / 1e6, 4) << " |\n";
  }
  return o.str();
}

std::string FidelityReport::to_svg() const {
  const double W = 560, H = 560, L = 80, R = 20, T = 66, B = 70;
  double lo = 1e300, hi = 0;
  for (const auto& p : points)
    for (double v : {p.measured_s, p.simulated_s})
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(hi > 0)) lo = 1e-3, hi = 1.0;
  double llo = std::log10(lo), lhi = std::log10(hi);
  const double pad = std::max(0.05, 0.08 * (lhi - llo));
  llo -= pad;
  lhi += pad;
  auto x = [&](double v) { return L + (std::log10(v) - llo) / (lhi - llo) * (W - L - R); };
  auto y = [&](double v) { return H - B - (std::log10(v) - llo) / (lhi - llo) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" << xml_escape(graph) << " on "
    << xml_escape(devices) << ": simulated vs measured step time</text>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"38\" text-anchor=\"middle\">Spearman " << format_number(spearman, 3)
    << ", Kendall " << format_number(kendall, 3) << ", MAPE " << format_number(100 * mape, 3)
    << "%, n = " << points.size() << "</text>\n";
  if (!std::isnan(retest_spearman))
    o << "<text x=\"" << W / 2
      << "\" y=\"54\" text-anchor=\"middle\" fill=\"#555\">measured vs re-measured (round 1 vs 2): Spearman "
      << format_number(retest_spearman, 3) << "</text>\n";
  // Axes and decade ticks.
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  // Ticks at 1, 2, 5 x 10^e; finer steps when the data span less than a decade.
  std::vector<double> fine;
  for (int k = 10; k < 100; ++k) fine.push_back(k / 10.0);
  std::vector<double> ticks;
  for (const std::vector<double>& steps :
       {std::vector<double>{1, 2, 5}, std::vector<double>{1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8}, fine}) {
    ticks.clear();
    for (int e = static_cast<int>(std::floor(llo)); e <= static_cast<int>(std::ceil(lhi)); ++e)
      for (double m : steps) {
        const double v = m * std::pow(10.0, e);
        if (std::log10(v) >= llo && std::log10(v) <= lhi) ticks.push_back(v);
      }
    if (ticks.size() >= 3) break;
  }
  if (ticks.size() > 8) {  // thin the finest set to at most 8 labels
    const size_t every = (ticks.size() + 7) / 8;
    std::vector<double> thinned;
    for (size_t i = 0; i < ticks.size(); i += every) thinned.push_back(ticks[i]);
    ticks.swap(thinned);
  }
  for (double v : ticks) {
    o << "<line x1=\"" << x(v) << "\" y1=\"" << T << "\" x2=\"" << x(v) << "\" y2=\"" << H - B
      << "\" stroke=\"#ddd\"/>\n";
    o << "<line x1=\"" << L << "\" y1=\"" << y(v) << "\" x2=\"" << W - R << "\" y2=\"" << y(v)
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << x(v) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << format_number(v, 3)
      << "</text>\n";
    o << "<text x=\"" << L - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">" << format_number(v, 3)
      << "</text>\n";
  }
  // y = x and the +-10% band.
  const double a = std::pow(10.0, llo), b = std::pow(10.0, lhi);
  o << "<line x1=\"" << x(a) << "\" y1=\"" << y(a) << "\" x2=\"" << x(b) << "\" y2=\"" << y(b)
    << "\" stroke=\"gray\" stroke-dasharray=\"4,3\"/>\n";
  for (double f : {0.9, 1.1})
    o << "<line x1=\"" << x(a) << "\" y1=\"" << y(a * f) << "\" x2=\"" << x(b) << "\" y2=\"" << y(b * f)
      << "\" stroke=\"#bbb\" stroke-dasharray=\"1,3\"/>\n";
  const std::vector<std::pair<std::string, std::string>> colors = {{"single", "#d62728"}, {"round_robin", "#9467bd"},
                                                                   {"split", "#1f77b4"},  {"blocks", "#17becf"},
                                                                   {"random", "#ff7f0e"}, {"perturbed", "#2ca02c"}};
  for (const auto& p : points) {
    if (p.measured_s <= 0 || p.simulated_s <= 0) continue;
    std::string color = "black";
    for (const auto& [k, c] : colors)
      if (k == p.kind) color = c;
    o << "<circle cx=\"" << x(p.measured_s) << "\" cy=\"" << y(p.simulated_s) << "\" r=\"4\" fill=\"" << color
      << "\" fill-opacity=\"0.8\"><title>" << p.kind << ": measured " << format_number(p.measured_s, 4)
      << " s, simulated " << format_number(p.simulated_s, 4) << " s</title></circle>\n";
  }
  double ly = T + 14;
  for (const auto& [k, c] : colors) {
    o << "<circle cx=\"" << L + 12 << "\" cy=\"" << ly - 4 << "\" r=\"4\" fill=\"" << c << "\"/><text x=\"" << L + 22
      << "\" y=\"" << ly << "\">" << k << "</text>\n";
    ly += 16;
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 25
    << "\" text-anchor=\"middle\">measured step time (s)</text>\n";
  o << "<text transform=\"translate(20," << (T + H - B) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">simulated step time (s)</text>\n";
  o << "</svg>\n";
  return o.str();
}

}  // namespace placer
