// The Grafana dashboards in deploy/grafana: stable uids, the $datasource variable on every panel
// and query, unique panel ids, a unit on every panel, and at least one query per panel.
#include <filesystem>
#include <fstream>
#include <set>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace syncopate {
namespace {

const std::string kGrafanaDir = std::string(SYNCOPATE_SOURCE_DIR) + "/deploy/grafana";

TEST(Dashboards, FollowTheConventions) {
  std::set<std::string> uids;
  int dashboards = 0;
  for (const auto& file : std::filesystem::directory_iterator(kGrafanaDir)) {
    if (file.path().extension() != ".json") continue;
    ++dashboards;
    std::ifstream in(file.path());
    const nlohmann::json d = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(d.is_discarded()) << file.path() << " is not JSON";
    const std::string name = file.path().filename().string();
    ASSERT_TRUE(d.contains("uid") && d["uid"].is_string()) << name;
    EXPECT_EQ(d["uid"].get<std::string>() + ".json", name) << "uid must match the file name";
    EXPECT_TRUE(uids.insert(d["uid"]).second) << "duplicate uid " << d["uid"];
    bool datasource_var = false;
    for (const auto& v : d["templating"]["list"]) {
      datasource_var |=
          v["name"] == "datasource" && v["type"] == "datasource" && v["query"] == "prometheus";
    }
    EXPECT_TRUE(datasource_var) << name << " needs a prometheus $datasource variable";
    std::set<int> ids;
    for (const auto& p : d["panels"]) {
      const std::string where = name + " / " + p["title"].get<std::string>();
      EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << where << ": duplicate panel id";
      EXPECT_EQ(p["datasource"]["uid"], "${datasource}") << where;
      EXPECT_FALSE(p["fieldConfig"]["defaults"]["unit"].get<std::string>().empty()) << where;
      ASSERT_FALSE(p["targets"].empty()) << where;
      for (const auto& t : p["targets"]) {
        EXPECT_EQ(t["datasource"]["uid"], "${datasource}") << where;
        EXPECT_FALSE(t["expr"].get<std::string>().empty()) << where;
      }
    }
  }
  EXPECT_EQ(dashboards, 2);
}

}  // namespace
}  // namespace syncopate
