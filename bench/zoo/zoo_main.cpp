// zoo: checks (and with --bench times) every kernel of the zoo on one device.
//
// Usage: zoo [--device NAME] [--full] [--bench] [--dump DIR] [--filter SUBSTR] [--csv FILE]
//   --full        the benchmark's shapes instead of the small ones
//   --bench       times each case as tritium::bench does (caches flushed before every run)
//   --dump DIR    each case's compiled kernels (TRITIUM_DUMP) in DIR/<kernel>.<shape>, which
//                 bench/compare/zoo.py --tritium-ptx DIR launches beside the Triton twins
//   --filter S    only the kernels whose name contains S
//   --csv FILE    also writes kernel,shape,device,ok,worst,median_ms,gbps,tflops to FILE
// Exits with 1 if any check fails.
#include "zoo.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace {

struct Options {
  std::string device, dump, filter, csv;
  bool full = false, bench = false;
};

struct Row {
  zoo::Outcome outcome;
  double median_ms = 0; // the sum over the case's timed launches
};

Row run_case(const tritium::Device& dev, const Options& opt, const zoo::Entry& e,
             const std::string& shape) {
  Row row;
  zoo::Context ctx{dev, opt.full, {}};
  ctx.launch = [&](const std::function<void()>& fn) {
    if (opt.bench)
      row.median_ms += tritium::bench(dev, fn).median_ms;
    fn();
  };
  if (!opt.dump.empty())
    setenv("TRITIUM_DUMP", fmt::format("{}/{}.{}", opt.dump, e.name, shape).c_str(), 1);
  try {
    row.outcome = e.run(ctx, shape);
  } catch (const std::exception& ex) {
    row.outcome.ok = false;
    row.outcome.note = ex.what();
  }
  unsetenv("TRITIUM_DUMP");
  return row;
}

int usage(const char* argv0) {
  fmt::print(stderr,
             "usage: {} [--device NAME] [--full] [--bench] [--dump DIR] [--filter SUBSTR] "
             "[--csv FILE]\n",
             argv0);
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--full")
      opt.full = true;
    else if (a == "--bench")
      opt.bench = true;
    else if (a == "--device" && has_value)
      opt.device = argv[++i];
    else if (a == "--dump" && has_value)
      opt.dump = argv[++i];
    else if (a == "--filter" && has_value)
      opt.filter = argv[++i];
    else if (a == "--csv" && has_value)
      opt.csv = argv[++i];
    else
      return usage(argv[0]);
  }
  try {
    tritium::Device dev =
        opt.device.empty() ? tritium::default_device() : tritium::device(opt.device);
    std::FILE* csv = opt.csv.empty() ? nullptr : std::fopen(opt.csv.c_str(), "w");
    if (!opt.csv.empty() && !csv)
      throw std::runtime_error("cannot write " + opt.csv);
    if (csv)
      fmt::print(csv, "kernel,shape,device,ok,worst,median_ms,gbps,tflops\n");
    fmt::print("device: {} ({}), {} shapes{}\n", dev.str(), dev.target(),
               opt.full ? "full" : "small", opt.bench ? ", timed" : "");
    int cases = 0, failed = 0;
    for (const zoo::Entry& e : zoo::entries()) {
      if (e.name.find(opt.filter) == std::string::npos)
        continue;
      for (const std::string& shape : e.shapes(opt.full)) {
        Row r = run_case(dev, opt, e, shape);
        const zoo::Outcome& o = r.outcome;
        double s = r.median_ms * 1e-3;
        double gbps = s > 0 && o.bytes > 0 ? o.bytes / s / 1e9 : 0;
        double tflops = s > 0 && o.flops > 0 ? o.flops / s / 1e12 : 0;
        ++cases;
        failed += !o.ok;
        fmt::print("{:<22} {:<18} {:<5} worst {:<9.3g}", e.name, shape, o.ok ? "ok" : "FAIL",
                   o.worst);
        if (opt.bench)
          fmt::print(" {:9.4f} ms {:8.1f} GB/s {:7.2f} TFLOP/s", r.median_ms, gbps, tflops);
        fmt::print("{}{}\n", o.note.empty() ? "" : "  ", o.note);
        std::fflush(stdout);
        if (csv)
          fmt::print(csv, "{},{},{},{},{:.4g},{:.6f},{:.2f},{:.4f}\n", e.name, shape, dev.name(),
                     o.ok ? 1 : 0, o.worst, r.median_ms, gbps, tflops);
      }
    }
    if (csv)
      std::fclose(csv);
    fmt::print("{} cases, {} failed\n", cases, failed);
    return failed ? 1 : 0;
  } catch (const std::exception& ex) {
    fmt::print(stderr, "zoo: {}\n", ex.what());
    return 1;
  }
}
