// End-to-end: the command lines the README and docs/ quote, run as a user runs them. The README's
// first command (scripts/demo.sh) from a fresh clone's state, `syncopate status` against a running
// cluster, `syncopate sim multicast` as quoted, every flag of every quoted command line known to
// its binary, every benchmark's usage, and a --report-dir that cannot be made.
#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  return names;
}

// The README's first command, as a newcomer runs it from a fresh clone: no runs/ folder yet. The
// script's own compare step, narrowed through the variables it documents; install and build are
// the test suite's own (SYNCOPATE_DEMO_BUILD=0, the binaries under test).
TEST(ReadmeE2E, DemoScriptRunsWhereNoRunsFolderExists) {
  const std::string root = MakeTempDir("demo");
  const std::string runs = root + "/fresh-clone/runs";
  const std::string log = root + "/demo.out";
  auto demo = cli::ChildProcess::Spawn(
      {"/bin/bash", std::string(SYNCOPATE_SOURCE_DIR) + "/scripts/demo.sh"},
      {{"SYNCOPATE_DEMO_BUILD", "0"},
       {"SYNCOPATE_BIN_DIR", BinDir()},
       {"SYNCOPATE_DEMO_RUNS_DIR", runs},
       {"SYNCOPATE_DEMO_MODES", "bsp,wbsp"},
       {"SYNCOPATE_DEMO_TIME_LIMIT", "6s"},
       {"OPENBLAS_NUM_THREADS", "1"}},
      log);
  ASSERT_TRUE(demo.ok()) << demo.status();
  std::optional<int> status = (*demo)->Wait(absl::Minutes(3));
  ASSERT_TRUE(status.has_value()) << "demo.sh did not finish; see " << log;
  const std::string output = Read(log);
  ASSERT_EQ(ExitCode(*status), 0) << cli::DescribeExit(*status) << "\n" << output;

  const std::vector<std::string> made = Entries(runs);
  ASSERT_EQ(made.size(), 1u) << "one run folder under " << runs;
  EXPECT_TRUE(absl::StartsWith(made[0], "demo-")) << made[0];
  const std::string report = runs + "/" + made[0];
  // The comparison table on the terminal: its header, then one row per mode.
  EXPECT_TRUE(absl::StrContains(output, "mode          lr     time to target (runs)")) << output;
  for (const std::string mode : {"bsp", "wbsp"}) {
    EXPECT_TRUE(
        std::regex_search(output, std::regex("\n" + mode + " +[0-9.]+ +(not reached|[0-9.]+s) ")))
        << mode << " has no row in\n"
        << output;
    EXPECT_EQ(ReadJson(report + "/" + mode + "/summary.json")["trainers"], 4) << mode;
  }
  EXPECT_TRUE(absl::StrContains(output, "per-mode reports in " + report + "/<mode>/")) << output;
  EXPECT_EQ(Lines(Read(report + "/compare.csv")).size(), 3u);
  EXPECT_TRUE(absl::StrContains(Read(report + "/compare.svg"), "<svg"));
}

// The shell commands of the README's section `title`: each fenced sh block's lines, a line ending
// in a backslash joined with the next.
std::vector<std::string> SectionCommands(const std::string& title) {
  const std::string readme = Read(std::string(SYNCOPATE_SOURCE_DIR) + "/README.md");
  const size_t start = readme.find("\n## " + title + "\n");
  EXPECT_NE(start, std::string::npos) << "no section " << title;
  if (start == std::string::npos) return {};
  const size_t end = readme.find("\n## ", start + 1);
  const std::vector<std::string> lines = absl::StrSplit(readme.substr(start, end - start), '\n');
  std::vector<std::string> commands;
  bool in_sh = false;
  std::string pending;
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, "```")) {
      in_sh = !in_sh && line == "```sh";
      continue;
    }
    if (!in_sh || line.empty()) continue;
    pending += line;
    if (absl::EndsWith(pending, "\\")) {
      pending.pop_back();
      continue;
    }
    commands.push_back(pending);
    pending.clear();
  }
  return commands;
}

// README, "Bring your own model": its commands as quoted, in the checkout, straight after the
// README's first command (the package built), with only the run folder, the venv and the binaries
// under test put in their places. The script ends on its own, so the job finishes (exit 0) and
// leaves its model; the package then imports from the venv without PYTHONPATH.
TEST(ReadmeE2E, BringYourOwnModelRunsAsQuoted) {
  const std::string dir = MakeTempDir("byom");
  const std::vector<std::string> commands = SectionCommands("Bring your own model");
  ASSERT_EQ(commands.size(), 4u) << "build, local, venv, pip";
  for (size_t i = 0; i < commands.size(); ++i) {
    std::string command = commands[i];
    command = absl::StrReplaceAll(command, {{"build/bin/", BinDir() + "/"},
                                            {"runs/my-job", dir + "/my-job"},
                                            {".venv", dir + "/venv"}});
    // The build is the suite's own: configured, and the package target already built.
    if (absl::StartsWith(command, "./scripts/build.sh")) continue;
    const std::string log = absl::StrCat(dir, "/command-", i, ".out");
    auto run = cli::ChildProcess::Spawn(
        {"/bin/bash", "-c", "cd \"$0\" && " + command, SYNCOPATE_SOURCE_DIR},
        {{"OPENBLAS_NUM_THREADS", "1"}, {"PYTHONPATH", ""}}, log);
    ASSERT_TRUE(run.ok()) << run.status();
    std::optional<int> status = (*run)->Wait(absl::Minutes(5));
    ASSERT_TRUE(status.has_value()) << command << " did not finish; see " << log;
    ASSERT_EQ(ExitCode(*status), 0) << command << "\n" << Read(log);
  }
  EXPECT_TRUE(absl::StrContains(Read(dir + "/command-1.out"),
                                "finished: every trainer completed 300 steps"))
      << Read(dir + "/command-1.out");
  EXPECT_EQ(ReadJson(dir + "/my-job/summary.json")["model"]["files"].size(), 2u);
  // Installed: imported from anywhere, no PYTHONPATH.
  const std::string log = dir + "/import.out";
  auto python = cli::ChildProcess::Spawn(
      {"/bin/bash", "-c",
       "cd / && \"$0\"/venv/bin/python -c 'import syncopate, syncopate.torch; "
       "print(syncopate.__version__, syncopate.__file__)'",
       dir},
      {{"PYTHONPATH", ""}}, log);
  ASSERT_TRUE(python.ok());
  std::optional<int> imported = (*python)->Wait(absl::Minutes(1));
  ASSERT_TRUE(imported.has_value());
  EXPECT_EQ(ExitCode(*imported), 0) << Read(log);
  EXPECT_TRUE(absl::StrContains(Read(log), dir + "/venv/lib/")) << Read(log);
}

// `--report-dir` makes its parents, and when it cannot it says which path and why: exit 2, as for
// any bad flag, and nothing runs.
TEST(ReadmeE2E, AReportDirThatCannotBeMadeIsABadFlag) {
  const std::string root = MakeTempDir("report-dir");
  ASSERT_TRUE(base::WriteFileAtomically(root + "/file", "").ok());
  for (const std::string command : {"local", "compare"}) {
    const std::string log = root + "/" + command + ".out";
    const int status =
        RunBinary("syncopate", {command, "--report-dir=" + root + "/file/runs/x"}, log);
    EXPECT_EQ(ExitCode(status), 2) << cli::DescribeExit(status);
    EXPECT_TRUE(absl::StrContains(Read(log), "--report-dir " + root +
                                                 "/file/runs/x: cannot create " + root +
                                                 "/file/runs: Not a directory"))
        << Read(log);
  }
}

// docs/cli.md, "syncopate local": `syncopate status --coordinator=HOST:PORT
// --tls-dir=RUN_DIR/tls/operator` prints a running cluster (over mutual TLS, with the certificate
// `local` made for the operator), and `syncopate advise --coordinator` profiles it.
TEST(ReadmeE2E, StatusPrintsTheRunningCluster) {
  const std::string dir = MakeTempDir("status");
  auto local = StartLocal(dir, {"--mode=ssp", "--trainers=2", "--slowdown=1,2",
                                "--target-accuracy=0.99", "--time-limit=60s"});
  ASSERT_NE(local, nullptr);
  // The coordinator's address, from cluster.json once trainer 1 trains.
  std::string coordinator;
  auto training = [&](const std::string& d) {
    coordinator = CoordinatorAddress(d);
    return !coordinator.empty() && ReadTrace(d, 1).size() > 6;
  };
  ASSERT_NE(PidOnceTraining(dir, 1, training), 0) << "trainer 1 never trained; see " << dir;
  ASSERT_FALSE(coordinator.empty()) << "no coordinator in " << dir << "/cluster.json";
  const std::string log = dir + "/status.out";
  const int status = RunBinary(
      "syncopate", {"status", "--coordinator=" + coordinator, "--tls-dir=" + dir + "/tls/operator"},
      log);
  // `syncopate advise --coordinator` takes the trainers and their speeds from the same cluster.
  const std::string advise_log = dir + "/advise.out";
  const int advised = RunBinary("syncopate",
                                {"advise", "--coordinator=" + coordinator,
                                 "--tls-dir=" + dir + "/tls/operator", "--model-bytes=407080"},
                                advise_log);
  // Without a certificate the coordinator cannot be reached at all.
  const std::string refused_log = dir + "/status-insecure.out";
  const int refused =
      RunBinary("syncopate", {"status", "--coordinator=" + coordinator, "--insecure"}, refused_log);
  local->Signal(SIGINT);
  EXPECT_TRUE(local->Wait(absl::Minutes(1)).has_value());
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "\n" << Read(log);
  EXPECT_EQ(ExitCode(refused), 1) << Read(refused_log);
  ASSERT_EQ(ExitCode(advised), 0) << Read(advise_log);
  const std::string advised_text = Read(advise_log);
  std::smatch profile;
  ASSERT_TRUE(std::regex_search(advised_text, profile,
                                std::regex("^2 trainers, step .* x slowdowns ([0-9.]+),([0-9.]+), "
                                           "407080-byte model")))
      << advised_text;
  // Trainer 1 is twice as slow (--slowdown=1,2): measured slower, by roughly that. Its steps are
  // a fraction of a millisecond, and a sleep that short overshoots on a loaded machine (3.0
  // measured once in a fresh clone's suite), so only the direction and the order are checked.
  const double measured = std::stod(profile[2]) / std::stod(profile[1]);
  EXPECT_GT(measured, 1.3) << advised_text;
  EXPECT_LT(measured, 5) << advised_text;
  EXPECT_NE(Read(refused_log).find("UNAVAILABLE"), std::string::npos) << Read(refused_log);
  const std::vector<std::string> lines = Lines(Read(log));
  ASSERT_EQ(lines.size(), 4u) << Read(log);
  EXPECT_TRUE(std::regex_search(
      lines[0],
      std::regex("^mode ssp \\(staleness bound 3\\), 2 of 2 trainers live, up [0-9.]+s, "
                 "min clock [0-9]+, 0 rounds closed, (test accuracy [0-9.]+ at [0-9.]+s, )?"
                 "compute-time ratio [0-9.]+$")))
      << lines[0];
  EXPECT_TRUE(std::regex_search(lines[1], std::regex("^ +rank +slowdown +clock +wait")))
      << lines[1];
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(std::regex_search(
        lines[2 + r], std::regex(absl::StrCat("^ +", r, " +", r + 1, "\\.0 +[0-9]+ .* live "))))
        << lines[2 + r];
  }

  // Nobody there: a clear error naming the address, not a hang.
  EXPECT_EQ(
      ExitCode(RunBinary(
          "syncopate",
          {"status", "--coordinator=" + coordinator, "--tls-dir=" + dir + "/tls/operator"}, log)),
      1);
  EXPECT_TRUE(absl::StrContains(Read(log), "coordinator " + coordinator + ": UNAVAILABLE"))
      << Read(log);
}

// docs/cli.md, "syncopate sim multicast": the command as quoted, and the table it describes.
TEST(ReadmeE2E, SimPrintsTheQuotedTable) {
  const std::string dir = MakeTempDir("sim");
  const std::string log = dir + "/sim.out";
  const int status = RunBinary("syncopate",
                               {"sim", "multicast", "--mode=selmcast,orpheus", "--trainers=100",
                                "--bandwidth-spread=0.5", "--layer=l3"},
                               log, absl::Minutes(3));
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "\n" << Read(log);
  const std::vector<std::string> lines = Lines(Read(log));
  ASSERT_EQ(lines.size(), 6u) << Read(log);
  EXPECT_TRUE(absl::StartsWith(lines[0], "100 trainers, p=30, k=4, l3, spread 0.50")) << lines[0];
  EXPECT_TRUE(std::regex_search(lines[1], std::regex("^mode +normalized"))) << lines[1];
  EXPECT_TRUE(std::regex_search(lines[2], std::regex("^selmcast +[0-9.]+ "))) << lines[2];
  EXPECT_TRUE(std::regex_search(lines[3], std::regex("^orpheus +[0-9.]+ "))) << lines[3];
  EXPECT_TRUE(absl::StartsWith(lines[4], "normalized: ")) << lines[4];
}

// A command line quoted in a fenced block: the binary, its subcommand (syncopate's), its flags.
struct QuotedCommand {
  std::string file;
  std::string binary;
  std::string subcommand;
  std::set<std::string> flags;
};

// Every `syncopate...` command line in the fenced code blocks of `file` (continuation lines,
// indented or after a trailing backslash, belong to the command above; a blank line ends it).
// Commands quoted inline in prose are not read.
std::vector<QuotedCommand> QuotedCommands(const std::string& file) {
  static const std::regex kStart(
      "^(?:\\./build/bin/)?(syncopate(?:-store|-coordinator|-trainer)?)(?= |$)(?: (local|compare|"
      "sim(?: multicast)?|advise(?: probe)?|status|export|serve|modes|finish|certs(?: ca| "
      "issue)?)(?= |$))?");
  static const std::regex kFlag("--[a-z][a-z0-9-]*");
  std::vector<QuotedCommand> commands;
  bool fenced = false;
  bool active = false;     // the line above belongs to a quoted command
  bool continues = false;  // ... and ends with a backslash
  // Blank lines kept: one ends a command line.
  const std::vector<std::string> lines = absl::StrSplit(Read(file), '\n');
  for (const std::string& line : lines) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "```")) {
      fenced = !fenced;
      active = false;
      continue;
    }
    if (!fenced) continue;
    std::smatch start;
    if (std::regex_search(line, start, kStart)) {
      commands.push_back({file, start[1], start[2], {}});
      active = true;
    } else if (!active || !(continues || absl::StartsWith(line, " "))) {
      active = false;
      continue;
    }
    // A shell comment ends the command line.
    const std::string text = line.substr(0, line.find(" #"));
    for (std::sregex_iterator it(text.begin(), text.end(), kFlag), end; it != end; ++it) {
      commands.back().flags.insert(it->str());
    }
    continues = absl::EndsWith(text, "\\");
  }
  return commands;
}

// Every flag a quoted command line uses is one its binary takes (its --help lists it).
TEST(ReadmeE2E, EveryQuotedFlagIsKnownToItsBinary) {
  const std::string source = SYNCOPATE_SOURCE_DIR;
  std::vector<QuotedCommand> commands = QuotedCommands(source + "/README.md");
  for (const std::string& doc : Entries(source + "/docs")) {
    if (!absl::EndsWith(doc, ".md")) continue;
    std::vector<QuotedCommand> more = QuotedCommands(source + "/docs/" + doc);
    commands.insert(commands.end(), more.begin(), more.end());
  }
  std::set<std::string> binaries;
  for (const QuotedCommand& c : commands) binaries.insert(c.binary + " " + c.subcommand);
  // Not vacuous: the README and docs/ quote every binary and every subcommand.
  for (const std::string b :
       {"syncopate local", "syncopate compare", "syncopate sim", "syncopate sim multicast",
        "syncopate advise", "syncopate advise probe", "syncopate modes", "syncopate export",
        "syncopate serve", "syncopate certs ca", "syncopate certs issue", "syncopate-store ",
        "syncopate-coordinator ", "syncopate-trainer "}) {
    EXPECT_TRUE(binaries.count(b)) << "no quoted '" << b << "' found";
  }
  const std::string dir = MakeTempDir("help");
  for (size_t i = 0; i < commands.size(); ++i) {
    const QuotedCommand& c = commands[i];
    // A nested subcommand ("sim multicast") is one word per level.
    std::vector<std::string> args = absl::StrSplit(c.subcommand, ' ', absl::SkipEmpty());
    args.push_back("--help");
    const std::string log = absl::StrCat(dir, "/help-", i, ".out");
    ASSERT_EQ(ExitCode(RunBinary(c.binary, args, log)), 0) << c.binary << " " << c.subcommand;
    const std::string help = Read(log);
    for (const std::string& flag : c.flags) {
      // An option line of the help ("  --staleness INT ...", "  -h,--help ..."), not a mention in
      // another option's description.
      EXPECT_TRUE(
          std::regex_search(help, std::regex("(^|\n) *(-[a-zA-Z], *)?" + flag + "([^a-z0-9-]|$)")))
          << c.file << ": `" << c.binary << " " << c.subcommand << "` quotes " << flag
          << ", which its --help does not list";
    }
  }
}

// Every benchmark the bench docs quote tells its usage for --help, and refuses an argument it does
// not know (rather than running the benchmark).
TEST(ReadmeE2E, EveryBenchPrintsItsUsage) {
  const std::string dir = MakeTempDir("bench-help");
  std::vector<std::string> benches;
  for (const std::string& binary : Entries(BinDir())) {
    if (absl::StartsWith(binary, "syncopate-") &&
        (absl::EndsWith(binary, "-bench") || absl::EndsWith(binary, "-throughput"))) {
      benches.push_back(binary);
    }
  }
  EXPECT_GE(benches.size(), 6u) << "the benchmarks were not built into " << BinDir();
  for (const std::string& bench : benches) {
    const std::string log = absl::StrCat(dir, "/", bench, ".out");
    EXPECT_EQ(ExitCode(RunBinary(bench, {"--help"}, log)), 0) << bench;
    EXPECT_TRUE(absl::StrContains(absl::AsciiStrToLower(Read(log)), "usage")) << bench;
    EXPECT_NE(ExitCode(RunBinary(bench, {"--no-such-flag"}, log)), 0) << bench;
  }
}

}  // namespace
}  // namespace syncopate::e2e
