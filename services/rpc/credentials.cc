#include "rpc/credentials.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "openssl/pem.h"
#include "openssl/x509v3.h"
#include "spdlog/spdlog.h"

namespace syncopate::rpc {
namespace {

// The PEM file at `path`: NOT_FOUND when missing or empty, INVALID_ARGUMENT without a PEM block.
absl::StatusOr<std::string> ReadPemFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::NotFoundError(absl::StrCat(path, " is missing, unreadable or empty"));
  }
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(path, " holds no PEM block"));
  }
  return text.str();
}

// Accepts a server whose certificate (already verified against the CA) names one Syncopate
// identity, of the expected role and trust domain.
class RoleVerifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  RoleVerifier(Role role, std::string trust_domain)
      : role_(role), trust_domain_(std::move(trust_domain)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)>, grpc::Status* sync_status) override {
    std::vector<absl::string_view> uris;
    for (const grpc::string_ref& uri : request->uri_names()) {
      uris.emplace_back(uri.data(), uri.size());
    }
    std::string domain;
    absl::StatusOr<Identity> identity = OneIdentity(uris, &domain);
    std::string why;
    if (!identity.ok()) {
      why = std::string(identity.status().message());
    } else if (domain != trust_domain_) {
      why = absl::StrCat("its trust domain is ", Quoted(domain), ", not ", Quoted(trust_domain_));
    } else if (identity->role != role_) {
      why = absl::StrCat("it is ", identity->ToString(), ", not a ", RoleName(role_));
    }
    *sync_status = why.empty() ? grpc::Status::OK
                               : grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                              absl::StrCat("the server's certificate: ", why));
    return true;
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {}

 private:
  const Role role_;
  const std::string trust_domain_;
};

using X509Pointer = std::unique_ptr<X509, decltype(&X509_free)>;

absl::StatusOr<X509Pointer> ParseCertificate(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  X509Pointer cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr,
                   &X509_free);
  if (!cert) return absl::InvalidArgumentError("not a PEM certificate");
  return cert;
}

}  // namespace

absl::StatusOr<absl::Time> ExpiryOfCertificate(const std::string& pem) {
  ASSIGN_OR_RETURN(X509Pointer cert, ParseCertificate(pem));
  struct tm expiry = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &expiry) != 1) {
    return absl::InvalidArgumentError("the certificate's expiry cannot be read");
  }
  return absl::FromTM(expiry, absl::UTCTimeZone());
}

absl::StatusOr<Identity> IdentityOfCertificate(const std::string& pem, std::string* trust_domain) {
  ASSIGN_OR_RETURN(X509Pointer cert, ParseCertificate(pem));
  std::unique_ptr<GENERAL_NAMES, decltype(&GENERAL_NAMES_free)> names(
      static_cast<GENERAL_NAMES*>(
          X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)),
      &GENERAL_NAMES_free);
  std::vector<std::string> uris;
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      static_cast<size_t>(ASN1_STRING_length(uri)));
  }
  return OneIdentity({uris.begin(), uris.end()}, trust_domain);
}

absl::StatusOr<Credentials> Credentials::FromDirectory(const std::string& dir,
                                                       absl::Duration refresh) {
  const std::string ca = absl::StrCat(dir, "/", kCaFile);
  const std::string cert = absl::StrCat(dir, "/", kCertFile);
  const std::string key = absl::StrCat(dir, "/", kKeyFile);
  std::string cert_pem;
  for (const std::string* path : {&ca, &cert, &key}) {
    absl::StatusOr<std::string> pem = ReadPemFile(*path);
    if (!pem.ok()) return pem.status();
    if (path == &cert) cert_pem = *std::move(pem);
  }
  Credentials credentials;
  absl::StatusOr<Identity> identity = IdentityOfCertificate(cert_pem, &credentials.trust_domain_);
  if (!identity.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(cert, ": ", identity.status().message()));
  }
  credentials.identity_ = *identity;
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
      grpc::experimental::ExternalCertificateVerifier::Create<RoleVerifier>(server_role,
                                                                            trust_domain_));
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

absl::StatusOr<Credentials> CredentialsFromFlags(const std::string& tls_dir, bool insecure,
                                                 std::optional<Role> role) {
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
  absl::StatusOr<Credentials> credentials = Credentials::FromDirectory(tls_dir);
  if (credentials.ok() && role && credentials->identity().role != *role) {
    return absl::FailedPreconditionError(
        absl::StrCat("the certificate in ", tls_dir, " is ", credentials->identity().ToString(),
                     "'s; this process needs a ", RoleName(*role), " certificate"));
  }
  return credentials;
}

}  // namespace syncopate::rpc
