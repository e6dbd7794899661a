#include "rpc/credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "spdlog/spdlog.h"

namespace syncopate::rpc {
namespace {

absl::Status CheckPemFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::NotFoundError(absl::StrCat(path, " is missing, unreadable or empty"));
  }
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(path, " holds no PEM block"));
  }
  return absl::OkStatus();
}

// Accepts a server whose certificate (already verified against the CA) names the expected role.
class RoleVerifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  explicit RoleVerifier(Role role) : role_(role) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)>, grpc::Status* sync_status) override {
    std::string found;
    for (const grpc::string_ref& uri : request->uri_names()) {
      absl::StatusOr<Identity> identity = ParseSpiffeId(absl::string_view(uri.data(), uri.size()));
      if (identity.ok() && identity->role == role_) {
        *sync_status = grpc::Status::OK;
        return true;
      }
      if (identity.ok()) found = identity->ToString();
    }
    *sync_status = grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        absl::StrCat("the server's certificate names ",
                     found.empty() ? "no Syncopate identity" : found, ", not a ", RoleName(role_)));
    return true;
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {}

 private:
  const Role role_;
};

}  // namespace

absl::StatusOr<Credentials> Credentials::FromDirectory(const std::string& dir,
                                                       absl::Duration refresh) {
  const std::string ca = absl::StrCat(dir, "/", kCaFile);
  const std::string cert = absl::StrCat(dir, "/", kCertFile);
  const std::string key = absl::StrCat(dir, "/", kKeyFile);
  for (const std::string* path : {&ca, &cert, &key}) {
    if (absl::Status s = CheckPemFile(*path); !s.ok()) return s;
  }
  Credentials credentials;
  credentials.directory_ = dir;
  credentials.provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      key, cert, ca,
      static_cast<unsigned int>(std::max<int64_t>(1, absl::ToInt64Seconds(refresh))));
  return credentials;
}

std::shared_ptr<grpc::ChannelCredentials> Credentials::ForChannel(Role server_role) const {
  if (!secure()) return grpc::InsecureChannelCredentials();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider_);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  options.set_check_call_host(false);
  options.set_certificate_verifier(
      grpc::experimental::ExternalCertificateVerifier::Create<RoleVerifier>(server_role));
  return grpc::experimental::TlsCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> Credentials::ForServer() const {
  if (!secure()) return grpc::InsecureServerCredentials();
  grpc::experimental::TlsServerCredentialsOptions options(provider_);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

absl::StatusOr<Credentials> CredentialsFromFlags(const std::string& tls_dir, bool insecure) {
  if (tls_dir.empty() == !insecure) {
    return absl::InvalidArgumentError(
        "give either --tls-dir (mutual TLS, the default way to run) or --insecure (none)");
  }
  if (insecure) {
    spdlog::warn(
        "--insecure: no TLS; anyone who can reach this process's ports may call anything, "
        "including pushing into the model (docs/security.md)");
    return Credentials::Insecure();
  }
  return Credentials::FromDirectory(tls_dir);
}

}  // namespace syncopate::rpc
