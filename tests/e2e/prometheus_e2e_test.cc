// End-to-end: `syncopate local --prometheus` starts a real Prometheus that scrapes every process;
// every query of every dashboard panel returns data from it, and the straggler alert fires for a
// strongly slowed trainer.
#include <curl/curl.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

const std::string kGrafanaDir = std::string(SYNCOPATE_SOURCE_DIR) + "/deploy/grafana";

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET `url` + "?query=<expr>" (or just `url`); the parsed JSON body, discarded on any failure.
nlohmann::json Get(const std::string& url, const std::string& query = "") {
  CURL* curl = curl_easy_init();
  std::string target = url;
  if (!query.empty()) {
    char* escaped = curl_easy_escape(curl, query.c_str(), static_cast<int>(query.size()));
    target += std::string("?query=") + escaped;
    curl_free(escaped);
  }
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(body, nullptr, false);
}

// Empty when the query returned at least one sample and every value is finite; else why not.
std::string CheckQuery(const std::string& prometheus, const std::string& expr) {
  nlohmann::json reply = Get(prometheus + "/api/v1/query", expr);
  if (reply.is_discarded() || reply["status"] != "success") return "query failed: " + reply.dump();
  const nlohmann::json& result = reply["data"]["result"];
  if (reply["data"]["resultType"] == "scalar") {
    return std::isfinite(std::stod(result[1].get<std::string>())) ? "" : "not finite";
  }
  if (result.empty()) return "empty result";
  for (const auto& sample : result) {
    const double v = std::stod(sample["value"][1].get<std::string>());
    if (!std::isfinite(v)) return "non-finite value for " + sample["metric"].dump();
  }
  return "";
}

// Every panel query of every dashboard, with the dashboards' variables substituted.
std::vector<std::pair<std::string, std::string>> DashboardQueries() {
  std::vector<std::pair<std::string, std::string>> queries;  // (where, expr)
  for (const auto& file : std::filesystem::directory_iterator(kGrafanaDir)) {
    nlohmann::json dashboard = ReadJson(file.path().string());
    EXPECT_FALSE(dashboard.is_discarded()) << file.path();
    for (const auto& panel : dashboard["panels"]) {
      for (const auto& target : panel["targets"]) {
        const std::string expr =
            absl::StrReplaceAll(target["expr"].get<std::string>(),
                                {{"$__rate_interval", "15s"}, {"$trainer", "trainer-0"}});
        queries.emplace_back(dashboard["uid"].get<std::string>() + " / " +
                                 panel["title"].get<std::string>() + " / " +
                                 target["refId"].get<std::string>(),
                             expr);
      }
    }
  }
  return queries;
}

TEST(PrometheusE2E, DashboardsHaveDataAndTheStragglerAlertFires) {
  ASSERT_GT(DashboardQueries().size(), 20u);
  const std::string dir = MakeTempDir("prometheus");
  // BSP with a 12x slower trainer: rounds close, grants happen, and trainer-2 is a straggler.
  auto local = StartLocal(dir, {"--prometheus", "--mode=bsp", "--trainers=3", "--slowdown=1,1,12",
                                "--target-accuracy=0.99", "--time-limit=240s"});
  ASSERT_NE(local, nullptr);

  std::string prometheus;
  absl::Time deadline = absl::Now() + absl::Seconds(90);
  while (prometheus.empty() && absl::Now() < deadline) {
    nlohmann::json info = ReadJson(dir + "/prometheus.json");
    if (!info.is_discarded()) prometheus = info["url"];
    absl::SleepFor(absl::Milliseconds(250));
  }
  ASSERT_FALSE(prometheus.empty()) << "Prometheus never started; see " << dir;

  // The first scrape takes several seconds: wait, bounded, for all five targets to be up.
  int up = 0;
  deadline = absl::Now() + absl::Seconds(90);
  while (up < 5 && absl::Now() < deadline) {
    nlohmann::json targets = Get(prometheus + "/api/v1/targets");
    up = 0;
    if (!targets.is_discarded()) {
      for (const auto& t : targets["data"]["activeTargets"]) up += t["health"] == "up";
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
  ASSERT_EQ(up, 5) << "targets up (1 store, coordinator, 3 trainers); see " << dir;

  // Every panel query, retried until it has data or the shared deadline passes.
  std::vector<std::pair<std::string, std::string>> pending = DashboardQueries();
  std::map<std::string, std::string> why;
  deadline = absl::Now() + absl::Seconds(90);
  while (!pending.empty() && absl::Now() < deadline) {
    std::vector<std::pair<std::string, std::string>> still;
    for (const auto& [where, expr] : pending) {
      const std::string problem = CheckQuery(prometheus, expr);
      if (!problem.empty()) {
        why[where] = expr + ": " + problem;
        still.emplace_back(where, expr);
      }
    }
    pending = still;
    if (!pending.empty()) absl::SleepFor(absl::Seconds(2));
  }
  for (const auto& [where, expr] : pending) ADD_FAILURE() << where << ": " << why[where];

  // The straggler alert fires for real (local runs hold alerts 10 s instead of 5 min).
  bool firing = false;
  deadline = absl::Now() + absl::Seconds(120);
  while (!firing && absl::Now() < deadline) {
    nlohmann::json alerts = Get(prometheus + "/api/v1/alerts");
    if (!alerts.is_discarded()) {
      for (const auto& a : alerts["data"]["alerts"]) {
        firing |= a["labels"]["alertname"] == "SyncopateTrainerStraggler" &&
                  a["labels"]["instance"] == "trainer-2" && a["state"] == "firing";
      }
    }
    if (!firing) absl::SleepFor(absl::Seconds(1));
  }
  EXPECT_TRUE(firing) << "SyncopateTrainerStraggler never fired for trainer-2; see " << dir;

  local->Signal(SIGINT);
  std::optional<int> status = local->Wait(absl::Seconds(60));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(ExitCode(*status), 130);
  EXPECT_TRUE(Get(prometheus + "/api/v1/targets").is_discarded()) << "Prometheus still running";
}

}  // namespace
}  // namespace syncopate::e2e
