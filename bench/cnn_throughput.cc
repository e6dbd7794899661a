// Training throughput of a compute backend: samples per second of TrainStep on Fashion-MNIST.
// bench/cnn_bench.sh runs it back to back with bench/pytorch_cnn.py (the same network in PyTorch)
// and prints the ratio.
#include <chrono>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "compute/backend.h"
#include "data/dataset.h"

int main(int argc, char** argv) {
  std::string device = "cpu", model_name = "cnn",
              data_dir = syncopate::data::kDefaultFashionMnistDir;
  int batch = 128, warmup = 20, steps = 200;
  float learning_rate = 0.05f;
  CLI::App app{"samples/s of one backend's training step"};
  app.add_option("--device", device, "cpu, cuda or auto");
  app.add_option("--model", model_name, "mlp or cnn");
  app.add_option("--batch-size", batch)->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Untimed steps first (cuDNN chooses algorithms here)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--steps", steps, "Timed steps")->check(CLI::PositiveNumber);
  app.add_option("--learning-rate", learning_rate);
  app.add_option("--data-dir", data_dir);
  CLI11_PARSE(app, argc, argv);

  std::string fallback;
  auto backend = syncopate::compute::MakeBackend(device, &fallback);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  if (!fallback.empty())
    std::fprintf(stderr, "--device=auto: %s; using the CPU\n", fallback.c_str());
  syncopate::compute::ModelSpec spec;
  spec.architecture = model_name;
  auto model = (*backend)->CreateModel(spec, 1);
  auto train = syncopate::data::LoadFashionMnist(data_dir, "train");
  if (!model.ok() || !train.ok()) {
    std::fprintf(stderr, "%s\n", (model.ok() ? train.status() : model.status()).ToString().c_str());
    return 1;
  }
  const size_t batches = train->size() / batch;
  float loss = 0;
  auto step = [&](int i) {
    const size_t start = (static_cast<size_t>(i) % batches) * batch;
    loss = (*model)->TrainStep(train->image(start), train->labels.data() + start, batch,
                               learning_rate);
  };
  for (int i = 0; i < warmup; ++i) step(i);
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step(warmup + i);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  // One line of JSON, like bench/pytorch_cnn.py.
  std::printf(
      "{\"framework\": \"syncopate\", \"device\": \"%s\", \"model\": \"%s\", \"batch\": %d, "
      "\"steps\": %d, \"samples_per_second\": %.1f, \"last_loss\": %.4f, \"backend\": \"%s\"}\n",
      (*backend)->name().c_str(), model_name.c_str(), batch, steps, steps * batch / seconds, loss,
      (*backend)->description().c_str());
  return 0;
}
