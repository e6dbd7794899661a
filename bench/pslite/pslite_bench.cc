// ps-lite's push+pull goodput on the work syncopate-store-bench does: a model of four equal float
// tensors (one key each) pushed (the server adds it into its copy, as our store applies a delta)
// and pulled back, timed per repeat; the median of 2 * bytes / seconds. ps-lite gets its best
// use: zero-copy ZPush/ZPull, the four tensors in flight at once, pulls answered from the
// server's arrays without a copy, and the allocator tuning of Syncopate's processes.
// Built and run by bench/pslite/compare.sh against a ps-lite checkout; not part of the build.
// Environment: MIB (model size, default 64), REPEATS (default 5), and ps-lite's DMLC_* variables.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "ps/ps.h"

using namespace ps;

struct Handle {
  std::map<Key, SArray<float>> tensors;
  void operator()(const KVMeta& meta, const KVPairs<float>& req, KVServer<float>* server) {
    KVPairs<float> res;
    if (meta.push) {
      size_t offset = 0;
      for (size_t i = 0; i < req.keys.size(); ++i) {
        const size_t len = req.lens.empty() ? req.vals.size() : static_cast<size_t>(req.lens[i]);
        SArray<float>& t = tensors[req.keys[i]];
        if (t.size() != len) {
          t.resize(len, 0.0f);
        }
        float* dst = t.data();
        const float* src = req.vals.data() + offset;
        for (size_t j = 0; j < len; ++j) dst[j] += src[j];
        offset += len;
      }
    }
    if (meta.pull) {
      // One key per request (the worker pulls each tensor on its own): shared, no copy.
      res.keys = req.keys;
      const SArray<float>& t = tensors[req.keys[0]];
      res.vals = t;
      res.lens.push_back(static_cast<int>(t.size()));
    }
    server->Response(meta, res);
  }
};

int main() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);  // the same tuning as Syncopate's processes
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  const size_t mib = std::atoi(std::getenv("MIB") ? std::getenv("MIB") : "64");
  const int repeats = std::atoi(std::getenv("REPEATS") ? std::getenv("REPEATS") : "5");
  Start(0);
  KVServer<float>* server = nullptr;
  if (IsServer()) {
    server = new KVServer<float>(0);
    server->set_request_handle(Handle());
  }
  if (IsWorker()) {
    KVWorker<float> kv(0, 0);
    const size_t floats = mib * (1 << 20) / 4, per = floats / 4;
    std::vector<SArray<float>> delta(4);
    std::vector<SArray<Key>> keys(4);
    std::vector<SArray<int>> lens(4);
    for (int k = 0; k < 4; ++k) {
      delta[k].resize(per, 0.001f);
      keys[k].push_back(kMaxKey / 4 * k);  // one server: every key is its own
      lens[k].push_back(static_cast<int>(per));
    }
    std::vector<double> gbps, push_gbps, pull_gbps;
    for (int r = -1; r < repeats; ++r) {  // r = -1: a warm-up that sizes the server's tensors
      auto start = std::chrono::steady_clock::now();
      std::vector<int> ts;
      for (int k = 0; k < 4; ++k) ts.push_back(kv.ZPush(keys[k], delta[k], lens[k]));
      for (int t : ts) kv.Wait(t);
      auto pushed = std::chrono::steady_clock::now();
      std::vector<SArray<float>> out(4);
      std::vector<SArray<int>> out_lens(4);
      ts.clear();
      for (int k = 0; k < 4; ++k) ts.push_back(kv.ZPull(keys[k], &out[k], &out_lens[k]));
      for (int t : ts) kv.Wait(t);
      auto end = std::chrono::steady_clock::now();
      size_t got = 0;
      for (auto& o : out) got += o.size();
      if (got != floats) {
        std::fprintf(stderr, "pulled %zu floats, expected %zu\n", got, floats);
        return 1;
      }
      if (r < 0) continue;
      const double bytes = static_cast<double>(floats) * 4;
      gbps.push_back(2 * bytes / std::chrono::duration<double>(end - start).count() / 1e9);
      push_gbps.push_back(bytes / std::chrono::duration<double>(pushed - start).count() / 1e9);
      pull_gbps.push_back(bytes / std::chrono::duration<double>(end - pushed).count() / 1e9);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf(
        "{\"pslite_mib\":%zu,\"push_pull_gbps\":%.3f,\"push_gbps\":%.3f,\"pull_gbps\":%.3f}\n", mib,
        median(gbps), median(push_gbps), median(pull_gbps));
    std::fflush(stdout);
  }
  Finalize(0, true);
  delete server;
  return 0;
}
