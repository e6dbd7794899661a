// _syncopate: the client library (services/client) for Python. The Python package `syncopate`
// (syncopate/__init__.py) wraps it; nothing here is meant to be used directly.
//
// Parameters are NumPy arrays the library reads and writes where they are (the buffer protocol,
// no copies), or read/write callbacks for memory it cannot address (a CUDA tensor). The GIL is
// released while the session waits or transfers; the callbacks take it back. Pending signals are
// checked during every wait of start() and step(): a KeyboardInterrupt ends the session (it leaves
// the job) and is raised from the call; a stop requested by a signal handler (request_stop) makes
// step return False. An exception from a parameter callback ends the session and is raised too.
// Errors are syncopate.SyncopateError carrying the status code's name and the message.
// The first session sets gRPC's poll(2) engine for the process (rpc::PreferPollForAFewConnections),
// as syncopate-trainer does, unless GRPC_POLL_STRATEGY says otherwise.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "client/job_client.h"
#include "rpc/poll_engine.h"
#include "tensor/compression.h"
#include "tensor/model_file.h"

namespace py = pybind11;

namespace syncopate::python {
namespace {

[[noreturn]] void Raise(const absl::Status& status) {
  py::object error = py::module_::import("syncopate._errors").attr("SyncopateError");
  py::object instance =
      error(absl::StatusCodeToString(status.code()), std::string(status.message()));
  PyErr_SetObject(error.ptr(), instance.ptr());
  throw py::error_already_set();
}

absl::Duration Seconds(double s) { return absl::Seconds(s); }

// One trainer's session with its parameters; see syncopate.Session for the contract.
class PySession {
 public:
  explicit PySession(py::dict options) : options_(std::move(options)) {
    rpc::PreferPollForAFewConnections();  // the first session's: before any gRPC object
  }
  ~PySession() {
    py::gil_scoped_release release;
    job_.reset();
  }

  // A NumPy float32 array, C-contiguous and writeable, shared with the caller.
  void AddArray(const std::string& name, py::array array) {
    if (job_) Raise(absl::FailedPreconditionError("parameters are added before start()"));
    if (!py::isinstance<py::array_t<float>>(array) || array.dtype().kind() != 'f' ||
        array.itemsize() != 4) {
      Raise(absl::InvalidArgumentError("parameter '" + name + "' is not a float32 array"));
    }
    if (!(array.flags() & py::array::c_style) || !array.writeable()) {
      Raise(absl::InvalidArgumentError("parameter '" + name +
                                       "' is not a C-contiguous, writeable array"));
    }
    std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
    if (shape.empty()) shape = {1};
    absl::Status added = parameters_.Add(name, shape, static_cast<float*>(array.mutable_data()));
    if (!added.ok()) Raise(added);
    keep_.push_back(array);
  }

  // A parameter reached through read(out) / write(values), each given a flat float32 array view
  // that is valid only during the call. An exception a callback raises ends the session and is
  // raised again from the call that ran it.
  void AddCallbacks(const std::string& name, const std::vector<int64_t>& shape, py::function read,
                    py::function write) {
    if (job_) Raise(absl::FailedPreconditionError("parameters are added before start()"));
    auto view = [](const float* data, size_t n) {
      return py::array_t<float>({static_cast<py::ssize_t>(n)}, {sizeof(float)}, data, py::none());
    };
    absl::Status added = parameters_.Add(
        name, shape,
        [this, name, read, view](absl::Span<float> out) {
          py::gil_scoped_acquire gil;
          return Call(name, "read", [&] { read(view(out.data(), out.size())); });
        },
        [this, name, write, view](absl::Span<const float> in) {
          py::gil_scoped_acquire gil;
          return Call(name, "write", [&] {
            py::array_t<float> values = view(in.data(), in.size());
            values.attr("setflags")(py::arg("write") = false);
            write(values);
          });
        });
    if (!added.ok()) Raise(added);
    keep_.push_back(read);
    keep_.push_back(write);
  }

  void Start() {
    if (job_) Raise(absl::FailedPreconditionError("the session has already started"));
    caller_ = std::this_thread::get_id();
    client::JobOptions o;
    o.coordinator = options_["coordinator"].cast<std::string>();
    o.name = options_["name"].cast<std::string>();
    o.rank = options_["rank"].cast<int>();
    o.join_timeout = Seconds(options_["join_timeout"].cast<double>());
    o.rpc_timeout = Seconds(options_["rpc_timeout"].cast<double>());
    o.metrics_listen = options_["metrics_listen"].cast<std::string>();
    o.peer.listen = options_["peer_listen"].cast<std::string>();
    o.peer.advertise = options_["peer_address"].cast<std::string>();
    o.peer.egress_rate = options_["egress_rate"].cast<std::string>();
    o.peer.ingress_rate = options_["ingress_rate"].cast<std::string>();
    o.ready_file = options_["ready_file"].cast<std::string>();
    o.trace_file = options_["trace_file"].cast<std::string>();
    absl::StatusOr<rpc::Credentials> credentials =
        rpc::CredentialsFromFlags(options_["tls_dir"].cast<std::string>(),
                                  options_["insecure"].cast<bool>(), rpc::Role::kTrainer);
    if (!credentials.ok()) Raise(credentials.status());
    o.credentials = *credentials;
    o.session.slowdown = options_["slowdown"].cast<double>();
    o.session.step_time = Seconds(options_["step_time"].cast<double>());
    o.session.max_steps = options_["max_steps"].cast<int64_t>();
    o.max_rejoins = options_["max_rejoins"].cast<int>();
    o.session.eval_interval = Seconds(options_["eval_interval"].cast<double>());
    o.session.directive_timeout = Seconds(options_["directive_timeout"].cast<double>());
    o.session.interrupted = [this] { return CheckSignals(); };
    // A stop request (SIGTERM) does not cut the final Leave's wait short; an exception a signal
    // handler raised (Ctrl-C) does.
    o.leave_interrupted = [this] {
      CheckSignals();
      return interrupted_.load();
    };
    absl::Status status;
    {
      py::gil_scoped_release release;
      absl::StatusOr<std::unique_ptr<client::JobClient>> job =
          client::JobClient::Join(std::move(o), parameters_);
      if (job.ok()) {
        job_ = *std::move(job);
        status = job_->Start();
      } else {
        status = job.status();
      }
    }
    RaiseIfInterrupted();
    if (!status.ok()) Raise(status);
  }

  // Runs a parameter callback (with the GIL); its exception becomes an error of the library's
  // call and is kept to be raised from the Python call that ran it.
  template <typename F>
  absl::Status Call(const std::string& name, const char* what, F call) {
    try {
      call();
      return absl::OkStatus();
    } catch (py::error_already_set& e) {
      const std::string message = e.what();
      if (!callback_error_) callback_error_ = std::make_unique<py::error_already_set>(std::move(e));
      return absl::InternalError("the " + std::string(what) + " callback of parameter '" + name +
                                 "' raised: " + message);
    }
  }

  bool Step(float loss) {
    Started();
    caller_ = std::this_thread::get_id();
    absl::StatusOr<bool> more;
    {
      py::gil_scoped_release release;
      more = job_->Step(loss);  // rejoins the job after an eviction (client/job_client.h)
    }
    RaiseIfInterrupted();
    if (!more.ok()) Raise(more.status());
    return *more;
  }

  void RequestStop() { stop_requested_ = true; }

  void SetPaused(bool paused) {
    Started();
    py::gil_scoped_release release;  // it may write to the coordinator's stream
    job_->SetPaused(paused);
  }

  // A Leave that waits for a coordinator to come back (the final average's) gives up on Ctrl-C,
  // which is then raised here.
  void Close(std::optional<double> final_accuracy) {
    if (final_accuracy) CheckAccuracy(*final_accuracy);
    caller_ = std::this_thread::get_id();
    {
      py::gil_scoped_release release;
      if (job_) job_->session().Close("closed", final_accuracy);
    }
    RaiseIfInterrupted();
  }
  // Writes the parameters' values now (the job's model once training is over) to each of `paths`
  // (.npz or .pt, tensor/model_file.h). Every path is checked before anything is written.
  void SaveModel(const std::vector<std::string>& paths) {
    for (const std::string& path : paths) {
      if (absl::Status named = tensor::CheckModelPath(path); !named.ok()) Raise(named);
    }
    tensor::TensorMap values;
    absl::Status read = parameters_.Read(&values);  // a callback takes the GIL it holds already
    RaiseIfInterrupted();
    if (!read.ok()) Raise(read);
    absl::StatusOr<tensor::Model> model = tensor::ModelOf(parameters_.Specs(), values);
    if (!model.ok()) Raise(model.status());
    py::gil_scoped_release release;
    for (const std::string& path : paths) {
      if (absl::Status written = tensor::WriteModel(*model, path); !written.ok()) {
        py::gil_scoped_acquire gil;
        Raise(written);
      }
    }
  }
  bool final_accuracy_due() { return job_ && job_->session().final_accuracy_due(); }

  // These may come from a thread of the caller's (a background evaluation) while the training
  // loop's step rejoins the job: they reach the session through JobClient::WithSession.
  bool evaluation_due() {
    if (!job_) return false;
    py::gil_scoped_release release;
    return job_->WithSession([](client::Session& s) { return s.evaluation_due(); });
  }
  void ReportAccuracy(double accuracy) {
    CheckAccuracy(accuracy);
    Started();
    py::gil_scoped_release release;
    job_->WithSession([accuracy](client::Session& s) { s.ReportAccuracy(accuracy); });
  }
  int64_t steps() { return job_ ? job_->steps() : 0; }
  int rejoins() { return job_ ? job_->rejoins() : 0; }
  py::tuple World() {
    Started();
    client::Protocol::World w;
    {
      py::gil_scoped_release release;
      w = job_->WithSession([](client::Session& s) { return s.world(); });
    }
    return py::make_tuple(w.rank, w.size);
  }
  py::dict Welcome() {
    const v1::Welcome& w = Started().welcome();
    py::dict d;
    d["mode"] = w.mode();
    d["trainer_id"] = w.trainer_id();
    d["incarnation"] = w.incarnation();
    d["stores"] = w.store_addresses_size();
    d["compression"] = tensor::CompressionName({w.codec(), w.topk_ratio()});
    return d;
  }
  py::dict Timings() {
    Started();
    v1::TrainerTimings t;
    {
      py::gil_scoped_release release;
      t = job_->WithSession([](client::Session& s) { return s.Timings(); });
    }
    py::dict d;
    d["compute"] = t.compute_seconds();
    d["wait"] = t.wait_seconds();
    d["communication"] = t.communication_seconds();
    d["wall"] = t.wall_seconds();
    return d;
  }
  int metrics_port() { return job_ ? job_->metrics_port() : 0; }

 private:
  static void CheckAccuracy(double accuracy) {
    if (!(accuracy >= 0.0 && accuracy <= 1.0)) {
      Raise(absl::InvalidArgumentError("an accuracy is in [0, 1]"));
    }
  }

  client::Session& Started() {
    if (!job_) Raise(absl::FailedPreconditionError("the session has not started"));
    return job_->session();
  }

  // Called by the session while it waits, without the GIL. Python runs only on the thread of the
  // Python call in progress (the session's communication thread only reads the flags), and only
  // the main thread runs signal handlers.
  bool CheckSignals() {
    if (stop_requested_ || interrupted_) return true;
    if (std::this_thread::get_id() != caller_) return false;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      interrupt_ = std::make_unique<py::error_already_set>();
      interrupted_ = true;
      return true;
    }
    return stop_requested_.load();
  }

  // Raises what a signal handler or a parameter callback raised during the call (on its thread).
  void RaiseIfInterrupted() {
    std::unique_ptr<py::error_already_set> error =
        interrupt_ ? std::move(interrupt_) : std::move(callback_error_);
    if (!error) return;
    interrupt_.reset();
    callback_error_.reset();
    error->restore();
    throw py::error_already_set();
  }

  py::dict options_;
  client::BufferParameters parameters_;
  std::vector<py::object> keep_;  // the arrays and callbacks parameters_ points into
  std::unique_ptr<client::JobClient> job_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> interrupted_{false};
  std::atomic<std::thread::id> caller_;  // of the Python call in progress
  // Set and taken on the caller's thread only.
  std::unique_ptr<py::error_already_set> interrupt_;
  std::unique_ptr<py::error_already_set> callback_error_;
};

}  // namespace
}  // namespace syncopate::python

using syncopate::python::PySession;

PYBIND11_MODULE(_syncopate, m) {
  m.doc() = "Syncopate's client library; use the syncopate package.";
  py::class_<PySession>(m, "_Session")
      .def(py::init<py::dict>())
      .def("add_array", &PySession::AddArray)
      .def("add_callbacks", &PySession::AddCallbacks)
      .def("start", &PySession::Start)
      .def("step", &PySession::Step)
      .def("request_stop", &PySession::RequestStop)
      .def("set_paused", &PySession::SetPaused)
      .def("close", &PySession::Close, py::arg("final_accuracy") = py::none())
      .def("save_model", &PySession::SaveModel)
      .def("final_accuracy_due", &PySession::final_accuracy_due)
      .def("evaluation_due", &PySession::evaluation_due)
      .def("report_accuracy", &PySession::ReportAccuracy)
      .def("steps", &PySession::steps)
      .def("rejoins", &PySession::rejoins)
      .def("world", &PySession::World)
      .def("welcome", &PySession::Welcome)
      .def("timings", &PySession::Timings)
      .def("metrics_port", &PySession::metrics_port);
}
