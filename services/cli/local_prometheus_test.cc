#include "cli/local_prometheus.h"

#include <cstdlib>

#include "base/files.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace syncopate::cli {
namespace {

TEST(ShortenAlertHolds, ReplacesEveryForAndNothingElse) {
  const std::string rules =
      "      - alert: A\n        expr: rate(x[5m]) > 1\n        for: 5m\n"
      "      - alert: B\n        expr: y\n        for: 10m\n";
  EXPECT_EQ(ShortenAlertHolds(rules, absl::Seconds(10)),
            "      - alert: A\n        expr: rate(x[5m]) > 1\n        for: 10000ms\n"
            "      - alert: B\n        expr: y\n        for: 10000ms\n");
}

TEST(ScrapeConfig, ReadsTheTargetsFileAndPromtoolAcceptsIt) {
  LocalPrometheusOptions options;
  const std::string dir = ::testing::TempDir();
  const std::string rules = dir + "/alerts.yml";
  ASSERT_TRUE(base::WriteFileAtomically(
                  rules, ShortenAlertHolds(*base::ReadFile(DefaultAlertRules()), absl::Seconds(10)))
                  .ok());
  const std::string targets = dir + "/prometheus-targets.json";
  ASSERT_TRUE(
      base::WriteFileAtomically(targets, FileSdTargets({{"store", 0, 1, 9001, nullptr}})).ok());
  const std::string yaml = ScrapeConfig(options, rules, targets);
  for (const std::string& expected :
       {std::string("file_sd_configs"), targets, std::string("scrape_interval: 1000ms"), rules}) {
    EXPECT_NE(yaml.find(expected), std::string::npos) << expected << " missing in\n" << yaml;
  }
  const std::string config = dir + "/prometheus.yml";
  ASSERT_TRUE(base::WriteFileAtomically(config, yaml).ok());
  const std::string check = "promtool check config " + config + " > " + dir + "/promtool.out 2>&1";
  EXPECT_EQ(std::system(check.c_str()), 0) << *base::ReadFile(dir + "/promtool.out");
}

TEST(FileSdTargets, OneGroupPerProcessWithJobAndInstance) {
  const nlohmann::json targets = nlohmann::json::parse(
      FileSdTargets({{"store", 0, 1, 9001, nullptr}, {"trainer", 2, 0, 9004, nullptr}}));
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[1]["targets"][0], "127.0.0.1:9004");
  EXPECT_EQ(targets[1]["labels"]["job"], "syncopate-trainer");
  EXPECT_EQ(targets[1]["labels"]["instance"], "trainer-2");
  EXPECT_EQ(targets[0]["labels"]["job"], "syncopate-store");
}

}  // namespace
}  // namespace syncopate::cli
