// SPDX-License-Identifier: MIT
//
// The C++ side of the benchmark shim (see shim.h): registers C benchmark
// bodies with Google Benchmark, hands them iterations in batches, and after
// the usual console report prints a table of every benchmark against its
// group's baseline and checks the registered targets.

#include "shim.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

struct bk_bench_state {
  benchmark::State *state;
};

namespace {

struct Entry {
  std::string name;
  bk_bench_fn fn;
  void *arg;
  std::string group;
  bool baseline;
  double min_time;
};

struct Target {
  enum Kind { kRatio, kInfo, kCounter };
  Kind kind;
  std::string label;
  std::string numerator;    // kCounter: the benchmark
  std::string denominator;  // kCounter: the counter
  double max_ratio;         // kCounter: the most the counter may be
  std::string detail;       // kCounter: a counter printed beside it, or ""
};

// What the table needs from one benchmark's report.
struct Result {
  bool have = false;
  bool error = false;
  bool from_median = false;  // taken from the median of repetitions
  std::string error_message;
  double cpu_ns = 0;
  double real_ns = 0;
  double iterations = 0;
  std::vector<std::pair<std::string, double>> counters;
};

std::vector<Entry> g_entries;
std::vector<Target> g_targets;
std::vector<std::string> g_notes;
bool g_quick = false;
unsigned g_scale = 0; /* --bk_scale[=LOG2]: log2 of the scale run's keys */
uint64_t g_seed = UINT64_C(0x5eedb100f11e75);
double g_min_time_override = 0;  // 0: none
constexpr double kQuickMinTime = 0.02;

double to_ns(double value, benchmark::TimeUnit unit) {
  return value * (1e9 / benchmark::GetTimeUnitMultiplier(unit));
}

// The console report as usual, and a copy of each result for the table.
class TableReporter : public benchmark::ConsoleReporter {
 public:
  explicit TableReporter(OutputOptions options) : ConsoleReporter(options) {}

  void ReportRuns(const std::vector<Run> &reports) override {
    ConsoleReporter::ReportRuns(reports);
    for (const Run &run : reports) Collect(run);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    PrintTable();
    PrintTargets();
  }

  bool AnyError() const {
    for (const auto &kv : results_)
      if (kv.second.error) return true;
    return false;
  }

 private:
  void Collect(const Run &run) {
    Result &r = results_[run.run_name.function_name];
    if (run.error_occurred) {
      r.have = true;
      r.error = true;
      r.error_message = run.error_message;
      return;
    }
    bool is_median = run.run_type == Run::RT_Aggregate &&
                     run.aggregate_name == "median";
    if (run.run_type == Run::RT_Aggregate && !is_median) return;
    // Prefer the median of repetitions over any single repetition.
    if (r.from_median && !is_median) return;
    r.have = true;
    r.from_median = is_median;
    r.cpu_ns = to_ns(run.GetAdjustedCPUTime(), run.time_unit);
    r.real_ns = to_ns(run.GetAdjustedRealTime(), run.time_unit);
    r.iterations = static_cast<double>(run.iterations);
    r.counters.clear();
    for (const auto &kv : run.counters)
      r.counters.emplace_back(kv.first, kv.second.value);
  }

  const Result *Find(const std::string &name) const {
    auto it = results_.find(name);
    if (it == results_.end() || !it->second.have || it->second.error)
      return nullptr;
    return &it->second;
  }

  void PrintTable() {
    std::FILE *out = stdout;
    std::fflush(out);
    // Column set: every counter any benchmark reported, in name order.
    std::vector<std::string> counter_names;
    for (const auto &kv : results_)
      for (const auto &c : kv.second.counters)
        if (std::find(counter_names.begin(), counter_names.end(), c.first) ==
            counter_names.end())
          counter_names.push_back(c.first);
    std::sort(counter_names.begin(), counter_names.end());

    size_t name_width = 9;
    for (const Entry &e : g_entries)
      name_width = std::max(name_width, e.name.size());

    std::string rule(name_width + 36 + 14 * counter_names.size(), '-');
    std::fprintf(out, "\nbloomkit benchmark table (seed 0x%016" PRIx64
                      "%s; ns/op: CPU time per operation, the median when "
                      "repeated; x base: ns/op over the group's baseline)\n",
                 g_seed, g_quick ? ", quick mode" : "");
    std::fprintf(out, "%s\n%-*s %12s %12s %9s", rule.c_str(),
                 static_cast<int>(name_width), "benchmark", "ns/op",
                 "real ns/op", "x base");
    for (const std::string &c : counter_names)
      std::fprintf(out, " %13s", c.c_str());
    std::fprintf(out, "\n");

    // Groups in order of first registration; ungrouped rows last.
    std::vector<std::string> groups;
    for (const Entry &e : g_entries)
      if (std::find(groups.begin(), groups.end(), e.group) == groups.end())
        groups.push_back(e.group);
    std::stable_partition(groups.begin(), groups.end(),
                          [](const std::string &g) { return !g.empty(); });

    for (const std::string &group : groups) {
      const Result *base = nullptr;
      for (const Entry &e : g_entries)
        if (e.group == group && e.baseline) base = Find(e.name);
      bool any = false;
      for (const Entry &e : g_entries)
        if (e.group == group && results_.count(e.name)) any = true;
      if (!any) continue;
      std::fprintf(out, "%s\n", rule.c_str());
      if (!group.empty())
        std::fprintf(out, "[%s]\n", group.c_str());
      for (const Entry &e : g_entries) {
        if (e.group != group) continue;
        auto it = results_.find(e.name);
        if (it == results_.end()) continue;  // filtered out
        const Result &r = it->second;
        std::fprintf(out, "%-*s", static_cast<int>(name_width), e.name.c_str());
        if (r.error) {
          std::fprintf(out, " ERROR: %s\n", r.error_message.c_str());
          continue;
        }
        std::fprintf(out, " %12.2f %12.2f", r.cpu_ns, r.real_ns);
        if (e.baseline)
          std::fprintf(out, " %9s", "base");
        else if (base && base->cpu_ns > 0)
          std::fprintf(out, " %8.2fx", r.cpu_ns / base->cpu_ns);
        else
          std::fprintf(out, " %9s", "-");
        for (const std::string &c : counter_names) {
          auto found = std::find_if(
              r.counters.begin(), r.counters.end(),
              [&](const std::pair<std::string, double> &p) {
                return p.first == c;
              });
          if (found == r.counters.end())
            std::fprintf(out, " %13s", "-");
          else
            std::fprintf(out, " %13.4g", found->second);
        }
        std::fprintf(out, "\n");
      }
    }
    std::fprintf(out, "%s\n", rule.c_str());
    std::fflush(out);
  }

  void PrintTargets() {
    std::FILE *out = stdout;
    PrintTargetList(out);
    for (const std::string &note : g_notes)
      std::fprintf(out, "\n%s\n", note.c_str());
    std::fflush(out);
  }

  static const double *FindCounter(const Result &r, const std::string &name) {
    for (const auto &c : r.counters)
      if (c.first == name) return &c.second;
    return nullptr;
  }

  void PrintTargetList(std::FILE *out) {
    if (g_targets.empty()) return;
    int pass = 0, miss = 0, skip = 0, info = 0;
    int width = 0;
    for (const Target &t : g_targets)
      width = std::max(width, static_cast<int>(t.label.size()));
    std::fprintf(out,
                 "\ntargets (ratio of CPU ns/op unless a value is named, "
                 "lower is better; INFO: reported only)\n");
    for (const Target &t : g_targets) {
      if (t.kind == Target::kCounter) {
        const Result *r = Find(t.numerator);
        const double *value = r ? FindCounter(*r, t.denominator) : nullptr;
        if (!value) {
          std::fprintf(out, "  SKIP  %-*s (not run)\n", width,
                       t.label.c_str());
          skip++;
          continue;
        }
        bool ok = *value <= t.max_ratio;
        std::fprintf(out, "  %-4s  %-*s %s %.4g (limit %.4g", ok ? "PASS" : "MISS",
                     width, t.label.c_str(), t.denominator.c_str(), *value,
                     t.max_ratio);
        const double *detail =
            t.detail.empty() ? nullptr : FindCounter(*r, t.detail);
        if (detail) std::fprintf(out, "; %s %.6g", t.detail.c_str(), *detail);
        std::fprintf(out, ")\n");
        (ok ? pass : miss)++;
        continue;
      }
      const Result *num = Find(t.numerator);
      const Result *den = Find(t.denominator);
      if (!num || !den || den->cpu_ns <= 0) {
        std::fprintf(out, "  SKIP  %-*s (not run)\n", width, t.label.c_str());
        skip++;
        continue;
      }
      double ratio = num->cpu_ns / den->cpu_ns;
      if (t.kind == Target::kInfo) {
        std::fprintf(out, "  INFO  %-*s %6.2fx (%.1f / %.1f ns)\n", width,
                     t.label.c_str(), ratio, num->cpu_ns, den->cpu_ns);
        info++;
        continue;
      }
      bool ok = ratio <= t.max_ratio;
      std::fprintf(out, "  %-4s  %-*s %6.2fx (limit %.2fx; %.1f / %.1f ns)\n",
                   ok ? "PASS" : "MISS", width, t.label.c_str(), ratio,
                   t.max_ratio, num->cpu_ns, den->cpu_ns);
      (ok ? pass : miss)++;
    }
    std::fprintf(out, "targets: %d pass, %d miss, %d skipped", pass, miss,
                 skip);
    if (info) std::fprintf(out, "; %d informational", info);
    std::fprintf(out, "\n");
  }

  std::map<std::string, Result> results_;
};

bool env_true(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Remove argv[i], keeping argv[argc] == NULL.
void drop_arg(int *argc, char **argv, int i) {
  for (int j = i; j < *argc; j++) argv[j] = argv[j + 1];
  (*argc)--;
}

bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (errno || *end) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

extern "C" {

void bk_bench_register(const char *name, bk_bench_fn fn, void *arg,
                       const bk_bench_opts *opts) {
  Entry e;
  e.name = name;
  e.fn = fn;
  e.arg = arg;
  e.group = opts && opts->group ? opts->group : "";
  e.baseline = opts && opts->baseline;
  e.min_time = opts ? opts->min_time : 0;
  if (g_min_time_override > 0)
    e.min_time = g_min_time_override;
  else if (g_quick)
    e.min_time = e.min_time > 0 ? std::min(e.min_time, kQuickMinTime)
                                : kQuickMinTime;
  size_t index = g_entries.size();
  g_entries.push_back(e);

  benchmark::internal::Benchmark *b = benchmark::RegisterBenchmark(
      name, [index](benchmark::State &state) {
        bk_bench_state st = {&state};
        g_entries[index].fn(&st, g_entries[index].arg);
      });
  if (e.min_time > 0) b->MinTime(e.min_time);
}

void bk_bench_target(const char *label, const char *numerator,
                     const char *denominator, double max_ratio) {
  g_targets.push_back(
      Target{Target::kRatio, label, numerator, denominator, max_ratio, ""});
}

void bk_bench_info_ratio(const char *label, const char *numerator,
                         const char *denominator) {
  g_targets.push_back(
      Target{Target::kInfo, label, numerator, denominator, 0, ""});
}

void bk_bench_target_counter(const char *label, const char *benchmark,
                             const char *counter, double max_value,
                             const char *detail) {
  g_targets.push_back(Target{Target::kCounter, label, benchmark, counter,
                             max_value, detail ? detail : ""});
}

void bk_bench_note(const char *text) { g_notes.emplace_back(text); }

uint64_t bk_bench_batch(bk_bench_state *s) {
  benchmark::State &state = *s->state;
  benchmark::IterationCount done = state.iterations();
  benchmark::IterationCount left =
      state.max_iterations > done ? state.max_iterations - done : 1;
  benchmark::IterationCount n =
      std::min<benchmark::IterationCount>(left, BK_BENCH_MAX_BATCH);
  return state.KeepRunningBatch(n) ? static_cast<uint64_t>(n) : 0;
}

uint64_t bk_bench_batch_of(bk_bench_state *s, uint64_t unit) {
  if (unit <= 1) return bk_bench_batch(s);
  benchmark::State &state = *s->state;
  const auto u = static_cast<benchmark::IterationCount>(unit);
  benchmark::IterationCount done = state.iterations();
  benchmark::IterationCount left =
      state.max_iterations > done ? state.max_iterations - done : 1;
  benchmark::IterationCount cap = std::max<benchmark::IterationCount>(
      u, static_cast<benchmark::IterationCount>(BK_BENCH_MAX_BATCH) / u * u);
  benchmark::IterationCount n = std::min(left, cap);
  n = (n + u - 1) / u * u;  // whole chunks; KeepRunningBatch counts overshoot
  return state.KeepRunningBatch(n) ? static_cast<uint64_t>(n) : 0;
}

void bk_bench_pause(bk_bench_state *s) { s->state->PauseTiming(); }
void bk_bench_resume(bk_bench_state *s) { s->state->ResumeTiming(); }

void bk_bench_counter(bk_bench_state *s, const char *name, double value) {
  s->state->counters[name] = benchmark::Counter(value);
}

uint64_t bk_bench_iterations(const bk_bench_state *s) {
  return static_cast<uint64_t>(s->state->iterations());
}

void bk_bench_skip(bk_bench_state *s, const char *message) {
  s->state->SkipWithError(message);
}

bool bk_bench_quick(void) { return g_quick; }
unsigned bk_bench_scale(void) { return g_scale; }
uint64_t bk_bench_seed(void) { return g_seed; }

int bk_bench_main(int argc, char **argv, void (*register_benchmarks)(void)) {
  g_quick = env_true("BK_BENCH_QUICK");
  const char *seed_env = std::getenv("BK_BENCH_SEED");
  if (seed_env && *seed_env && !parse_u64(seed_env, &g_seed)) {
    std::fprintf(stderr, "bad BK_BENCH_SEED: %s\n", seed_env);
    return 1;
  }
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    if (std::strcmp(a, "--bk_quick") == 0) {
      g_quick = true;
    } else if (std::strcmp(a, "--bk_scale") == 0) {
      g_scale = 32;
    } else if (std::strncmp(a, "--bk_scale=", 11) == 0) {
      uint64_t v = 0;
      if (!parse_u64(a + 11, &v) || v < 10 || v > 36) {
        std::fprintf(stderr, "bad %s (log2 of the keys, 10..36)\n", a);
        return 1;
      }
      g_scale = (unsigned)v;
    } else if (std::strncmp(a, "--bk_seed=", 10) == 0) {
      if (!parse_u64(a + 10, &g_seed)) {
        std::fprintf(stderr, "bad %s\n", a);
        return 1;
      }
    } else if (std::strncmp(a, "--bk_min_time=", 14) == 0) {
      char *end = nullptr;
      g_min_time_override = std::strtod(a + 14, &end);
      if (*end || !(g_min_time_override > 0)) {
        std::fprintf(stderr, "bad %s\n", a);
        return 1;
      }
    } else if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "--bk_help") == 0) {
      std::printf(
          "bloomkit benchmarks. Own flags:\n"
          "  --bk_quick         smallest size only, short min_time (also "
          "BK_BENCH_QUICK=1)\n"
          "  --bk_seed=N        seed for keys and hashing (also "
          "BK_BENCH_SEED=N)\n"
          "  --bk_min_time=S    min_time of every benchmark, seconds\n"
          "  --bk_scale[=L]     also the scale run: 2^L keys (default 32)\n"
          "                     into one filter of each bloom layout at 1 %%\n"
          "Google Benchmark flags follow.\n\n");
      ++i;
      continue;  // leave --help for benchmark::Initialize
    } else {
      ++i;
      continue;
    }
    drop_arg(&argc, argv, i);
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::printf("bloomkit bench: seed 0x%016" PRIx64
              " (rerun with --bk_seed=0x%016" PRIx64 ")%s\n",
              g_seed, g_seed, g_quick ? ", quick mode" : "");
  std::fflush(stdout);

  register_benchmarks();

  bool color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  TableReporter reporter(color ? benchmark::ConsoleReporter::OO_Color
                               : benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.AnyError() ? 1 : 0;
}

}  // extern "C"
