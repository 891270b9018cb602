// zoo: checks (and with --bench times) every kernel of the zoo on one device.
//
// Usage: zoo [--device NAME] [--full] [--bench] [--dump DIR] [--filter SUBSTR] [--case K/S]
//            [--csv FILE]
//   --full        the benchmark's shapes instead of the small ones
//   --bench       times each case as tritium::bench does (caches flushed before every run)
//   --dump DIR    each case's compiled kernels (TRITIUM_DUMP) in DIR/<kernel>.<shape>, which
//                 bench/compare/zoo.py --tritium-ptx DIR launches beside the Triton twins.
//                 Each case then runs in a process of its own (this program, with --case), so
//                 that it compiles, and dumps, every kernel it launches (a kernel object that
//                 outlives a case would not compile again for the next shape) and a fault on
//                 the GPU stays in its case.
//   --filter S    only the kernels whose name contains S
//   --case K/S    only kernel K at shape S
//   --csv FILE    also writes kernel,shape,device,ok,worst,median_ms,gbps,tflops,compile_ms to
//                 FILE; compile_ms is what compiling the case's kernels took (tracing to loaded
//                 on the device), cold in a process of its own under --dump with the binary
//                 cache off (TRITIUM_CACHE_DIR=off)
// Exits with 1 if any check fails.
#include "zoo.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace {

struct Options {
  std::string argv0, device, dump, filter, only, csv;
  bool full = false, bench = false;
  bool row = false; // a child's: print the CSV row as "zoo-row: ..." for the parent
};

struct Result {
  zoo::Outcome outcome;
  double median_ms = 0;  // the sum over the case's timed launches
  double compile_ms = 0; // the kernels the case compiled (tritium::compile_stats)
};

Result run_case(const tritium::Device& dev, const Options& opt, const zoo::Entry& e,
                const std::string& shape) {
  Result r;
  zoo::Context ctx{dev, opt.full, {}};
  ctx.launch = [&](const std::function<void()>& fn) {
    if (opt.bench)
      r.median_ms += tritium::bench(dev, fn).median_ms;
    fn();
  };
  if (!opt.dump.empty())
    setenv("TRITIUM_DUMP", fmt::format("{}/{}.{}", opt.dump, e.name, shape).c_str(), 1);
  const tritium::CompileStats before = tritium::compile_stats();
  try {
    r.outcome = e.run(ctx, shape);
  } catch (const std::exception& ex) {
    r.outcome.ok = false;
    r.outcome.note = ex.what();
  }
  unsetenv("TRITIUM_DUMP");
  r.compile_ms = (tritium::compile_stats().seconds - before.seconds) * 1e3;
  return r;
}

// The human line and the CSV row of a case.
std::string line(const Options& opt, const std::string& name, const std::string& shape,
                 const Result& r) {
  const zoo::Outcome& o = r.outcome;
  double s = r.median_ms * 1e-3;
  std::string out =
      fmt::format("{:<22} {:<18} {:<5} worst {:<9.3g}", name, shape, o.ok ? "ok" : "FAIL", o.worst);
  if (opt.bench)
    out += fmt::format(" {:9.4f} ms {:8.1f} GB/s {:7.2f} TFLOP/s", r.median_ms,
                       s > 0 ? o.bytes / s / 1e9 : 0, s > 0 ? o.flops / s / 1e12 : 0);
  return out + (o.note.empty() ? "" : "  " + o.note);
}
std::string csv_row(const std::string& device, const std::string& name, const std::string& shape,
                    const Result& r) {
  const zoo::Outcome& o = r.outcome;
  double s = r.median_ms * 1e-3;
  return fmt::format("{},{},{},{},{:.4g},{:.6f},{:.2f},{:.4f},{:.1f}", name, shape, device,
                     o.ok ? 1 : 0, o.worst, r.median_ms,
                     s > 0 && o.bytes > 0 ? o.bytes / s / 1e9 : 0,
                     s > 0 && o.flops > 0 ? o.flops / s / 1e12 : 0, r.compile_ms);
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs one case in a child process (this program with --case and --row); returns its CSV row,
// or a failed one where the child died before printing it.
std::string run_child(const Options& opt, const std::string& device, const std::string& name,
                      const std::string& shape) {
  std::string cmd = fmt::format("{} --device {} --case {} --row --dump {}{}{}", quoted(opt.argv0),
                                quoted(device), quoted(name + "/" + shape), quoted(opt.dump),
                                opt.full ? " --full" : "", opt.bench ? " --bench" : "");
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p)
    throw std::runtime_error("cannot run " + cmd);
  std::string row, text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    std::string l = buf;
    if (l.rfind("zoo-row: ", 0) == 0)
      row = l.substr(9, l.find_last_not_of('\n') - 8);
    else if (l.rfind("device: ", 0) != 0 && l.find(" cases, ") == std::string::npos)
      text += l;
  }
  int status = pclose(p);
  fmt::print("{}", text);
  if (row.empty()) {
    Result r;
    r.outcome.note = fmt::format("the process running it ended with status {}", status);
    fmt::print("{}\n", line(opt, name, shape, r));
    row = csv_row(device, name, shape, r);
  }
  return row;
}

int usage(const char* argv0) {
  fmt::print(stderr,
             "usage: {} [--device NAME] [--full] [--bench] [--dump DIR] [--filter SUBSTR] "
             "[--case KERNEL/SHAPE] [--csv FILE]\n",
             argv0);
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  Options opt;
  opt.argv0 = argv[0];
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--full")
      opt.full = true;
    else if (a == "--bench")
      opt.bench = true;
    else if (a == "--row")
      opt.row = true;
    else if (a == "--device" && has_value)
      opt.device = argv[++i];
    else if (a == "--dump" && has_value)
      opt.dump = argv[++i];
    else if (a == "--filter" && has_value)
      opt.filter = argv[++i];
    else if (a == "--case" && has_value)
      opt.only = argv[++i];
    else if (a == "--csv" && has_value)
      opt.csv = argv[++i];
    else
      return usage(argv[0]);
  }
  try {
    tritium::Device dev =
        opt.device.empty() ? tritium::default_device() : tritium::device(opt.device);
    const std::string device = dev.str();
    std::FILE* csv = opt.csv.empty() ? nullptr : std::fopen(opt.csv.c_str(), "w");
    if (!opt.csv.empty() && !csv)
      throw std::runtime_error("cannot write " + opt.csv);
    if (csv)
      fmt::print(csv, "kernel,shape,device,ok,worst,median_ms,gbps,tflops,compile_ms\n");
    fmt::print("device: {} ({}), {} shapes{}\n", device, dev.target(), opt.full ? "full" : "small",
               opt.bench ? ", timed" : "");
    const bool isolate = !opt.dump.empty() && !opt.row;
    int cases = 0, failed = 0;
    for (const zoo::Entry& e : zoo::entries()) {
      if (e.name.find(opt.filter) == std::string::npos)
        continue;
      for (const std::string& shape : e.shapes(opt.full)) {
        if (!opt.only.empty() && opt.only != e.name + "/" + shape)
          continue;
        std::string row;
        if (isolate) {
          row = run_child(opt, device, e.name, shape);
        } else {
          Result r = run_case(dev, opt, e, shape);
          fmt::print("{}\n", line(opt, e.name, shape, r));
          row = csv_row(device, e.name, shape, r);
          if (opt.row)
            fmt::print("zoo-row: {}\n", row);
        }
        std::fflush(stdout);
        ++cases;
        failed += row.find(fmt::format(",{},0,", device)) != std::string::npos;
        if (csv)
          fmt::print(csv, "{}\n", row);
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
