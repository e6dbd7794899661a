#include "tensor/model_file.h"

#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/status_macros.h"

namespace syncopate::tensor {
namespace {

void AppendLe32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Pickle opcodes (protocol 2), as the Python pickle module names them.
void Unicode(std::string* p, const std::string& s) {
  p->push_back('X');  // BINUNICODE
  AppendLe32(p, static_cast<uint32_t>(s.size()));
  *p += s;
}
void Int(std::string* p, int64_t v) {
  p->push_back('J');  // BININT: signed 32 bits (model sizes stay far below)
  AppendLe32(p, static_cast<uint32_t>(static_cast<int32_t>(v)));
}
void Global(std::string* p, const char* module, const char* name) {
  absl::StrAppend(p, "c", module, "\n", name, "\n");
}
void IntTuple(std::string* p, const std::vector<int64_t>& values) {
  p->push_back('(');  // MARK
  for (int64_t v : values) Int(p, v);
  p->push_back('t');  // TUPLE
}
void EmptyOrderedDict(std::string* p) {
  Global(p, "collections", "OrderedDict");
  p->push_back(')');  // EMPTY_TUPLE
  p->push_back('R');  // REDUCE
}

// A zip archive written with libzip, its entries stored (not compressed) as NumPy and PyTorch
// write theirs. The data added must outlive Close.
class ZipWriter {
 public:
  static absl::StatusOr<std::unique_ptr<ZipWriter>> Create(const std::string& path) {
    int error = 0;
    zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    if (archive == nullptr) {
      zip_error_t z;
      zip_error_init_with_code(&z, error);
      const std::string why = zip_error_strerror(&z);
      zip_error_fini(&z);
      return absl::UnavailableError(absl::StrCat("cannot create ", path, ": ", why));
    }
    return std::unique_ptr<ZipWriter>(new ZipWriter(archive));
  }
  ~ZipWriter() {
    if (archive_ != nullptr) zip_discard(archive_);
  }

  absl::Status Add(const std::string& name, const std::string& data) {
    zip_source_t* source = zip_source_buffer(archive_, data.data(), data.size(), 0);
    if (source == nullptr) return Error(name);
    const zip_int64_t index = zip_file_add(archive_, name.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      return Error(name);
    }
    if (zip_set_file_compression(archive_, index, ZIP_CM_STORE, 0) != 0) return Error(name);
    return absl::OkStatus();
  }

  absl::Status Close(const std::string& path) {
    zip_t* archive = archive_;
    archive_ = nullptr;
    if (zip_close(archive) != 0) {
      const std::string why = zip_strerror(archive);
      zip_discard(archive);
      return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", why));
    }
    return absl::OkStatus();
  }

 private:
  explicit ZipWriter(zip_t* archive) : archive_(archive) {}
  absl::Status Error(const std::string& name) {
    return absl::InternalError(absl::StrCat("zip entry ", name, ": ", zip_strerror(archive_)));
  }
  zip_t* archive_;
};

}  // namespace

absl::StatusOr<Model> ModelOf(const std::vector<TensorSpec>& specs, const TensorMap& values) {
  Model model;
  for (const TensorSpec& spec : specs) {
    auto found = values.find(spec.name);
    if (found == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no values for tensor '", spec.name, "'"));
    }
    if (static_cast<int64_t>(found->second.size()) != spec.NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' has ",
                                                     found->second.size(), " values, not ",
                                                     spec.NumElements()));
    }
    model.tensors.push_back({spec, found->second});
  }
  std::sort(model.tensors.begin(), model.tensors.end(),
            [](const ModelTensor& a, const ModelTensor& b) { return a.spec.name < b.spec.name; });
  return model;
}

std::string NpyBytes(const ModelTensor& tensor) {
  std::string shape;
  for (int64_t d : tensor.spec.shape) absl::StrAppend(&shape, d, ", ");
  if (tensor.spec.shape.size() > 1) shape.resize(shape.size() - 1);  // "(3, 4)"; "(3,)" for one
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", shape, "), }");
  // Magic (6), version (2) and length (2), then the header padded with spaces to a multiple of 64
  // bytes and ended by a newline.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.values.data()),
             tensor.values.size() * sizeof(float));
  return out;
}

std::string StateDictPickle(const Model& model) {
  std::string p = "\x80\x02";  // PROTO 2
  EmptyOrderedDict(&p);
  p.push_back('(');  // MARK: the items
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const tensor::TensorSpec& spec = model.tensors[i].spec;
    Unicode(&p, spec.name);
    // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)
    Global(&p, "torch._utils", "_rebuild_tensor_v2");
    p.push_back('(');
    // The storage, by persistent id ('storage', type, key, location, numel): data/<key>.
    p.push_back('(');
    Unicode(&p, "storage");
    Global(&p, "torch", "FloatStorage");
    Unicode(&p, absl::StrCat(i));
    Unicode(&p, "cpu");
    Int(&p, spec.NumElements());
    p.push_back('t');
    p.push_back('Q');  // BINPERSID
    Int(&p, 0);
    IntTuple(&p, spec.shape);
    std::vector<int64_t> stride(spec.shape.size(), 1);
    for (size_t d = spec.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * spec.shape[d];
    IntTuple(&p, stride);
    p.push_back('\x89');  // NEWFALSE: requires_grad
    EmptyOrderedDict(&p);
    p.push_back('t');
    p.push_back('R');
  }
  p.push_back('u');  // SETITEMS
  p.push_back('.');  // STOP
  return p;
}

absl::Status CheckModelPath(const std::string& path) {
  if (!absl::EndsWith(path, ".npz") && !absl::EndsWith(path, ".pt")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the model file's name must end in .npz (NumPy) or .pt (PyTorch)"));
  }
  return absl::OkStatus();
}

absl::Status WriteModel(const Model& model, const std::string& path) {
  RETURN_IF_ERROR(CheckModelPath(path));
  if (const size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    RETURN_IF_ERROR(base::MakeDirectories(path.substr(0, slash)));
  }
  const bool npz = absl::EndsWith(path, ".npz");
  // Written beside, then renamed: a reader never sees a partial file.
  const std::string partial = path + ".partial";
  ASSIGN_OR_RETURN(std::unique_ptr<ZipWriter> zip, ZipWriter::Create(partial));
  std::vector<std::string> entries;  // alive until Close
  entries.reserve(model.tensors.size() + 3);
  if (npz) {
    for (const ModelTensor& t : model.tensors) {
      entries.push_back(NpyBytes(t));
      RETURN_IF_ERROR(zip->Add(t.spec.name + ".npy", entries.back()));
    }
  } else {
    entries.push_back(StateDictPickle(model));
    RETURN_IF_ERROR(zip->Add("archive/data.pkl", entries.back()));
    entries.push_back("little");
    RETURN_IF_ERROR(zip->Add("archive/byteorder", entries.back()));
    for (size_t i = 0; i < model.tensors.size(); ++i) {
      const std::vector<float>& v = model.tensors[i].values;
      entries.emplace_back(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
      RETURN_IF_ERROR(zip->Add(absl::StrCat("archive/data/", i), entries.back()));
    }
    entries.push_back("3\n");
    RETURN_IF_ERROR(zip->Add("archive/version", entries.back()));
  }
  RETURN_IF_ERROR(zip->Close(path));
  if (rename(partial.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::tensor
