// Transport security for every Syncopate channel and server: mutual TLS from a certificate
// directory laid out as a Kubernetes TLS Secret (ca.crt, tls.crt, tls.key), re-read while it
// changes on disk, or explicitly none (--insecure). docs/security.md says how certificates are made
// and rotated.
#ifndef SYNCOPATE_RPC_CREDENTIALS_H_
#define SYNCOPATE_RPC_CREDENTIALS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "rpc/identity.h"

namespace syncopate::rpc {

// The file names in a certificate directory: the CA that signs every certificate of the job, this
// process's certificate (with its identity, identity.h) and its private key.
inline constexpr char kCaFile[] = "ca.crt";
inline constexpr char kCertFile[] = "tls.crt";
inline constexpr char kKeyFile[] = "tls.key";

// Immutable and cheap to copy; channels and servers made from one share its certificate watcher.
class Credentials {
 public:
  // No transport security: anyone who reaches the port may call anything (--insecure).
  Credentials() = default;
  static Credentials Insecure() { return Credentials(); }
  // Mutual TLS with the files in `dir`, re-read every `refresh` (a rotated Kubernetes Secret or a
  // re-issued local certificate takes effect on the next connection; open connections keep theirs).
  // NOT_FOUND naming a missing or empty file; INVALID_ARGUMENT for a file that holds no PEM block.
  // INVALID_ARGUMENT too when tls.crt names no Syncopate identity (identity.h), or more than one.
  static absl::StatusOr<Credentials> FromDirectory(const std::string& dir,
                                                   absl::Duration refresh = absl::Seconds(10));

  bool secure() const { return provider_ != nullptr; }
  const std::string& directory() const { return directory_; }
  // This process's identity and trust domain, as its certificate said when it was read at start
  // (a rotated certificate keeps them); empty when !secure().
  const Identity& identity() const { return identity_; }
  const std::string& trust_domain() const { return trust_domain_; }

  // For a channel to a server whose certificate must be signed by the CA and name one identity,
  // of `server_role` and this process's trust domain (host names are not checked: a trainer's peers
  // are dialled by address, and the role is what a client must know about its server). Insecure
  // credentials when !secure().
  std::shared_ptr<grpc::ChannelCredentials> ForChannel(Role server_role) const;
  // For a server: a client must present a certificate signed by the CA, or the handshake fails;
  // which calls it may make is the service's to decide (authorizer.h).
  std::shared_ptr<grpc::ServerCredentials> ForServer() const;

 private:
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider_;
  std::string directory_;
  Identity identity_;
  std::string trust_domain_;
};

// The one Syncopate identity among a PEM certificate's URI subject alternative names, and its trust
// domain. INVALID_ARGUMENT when the PEM does not parse, or names none or more than one.
absl::StatusOr<Identity> IdentityOfCertificate(const std::string& pem, std::string* trust_domain);
// When the PEM certificate `pem` expires (its notAfter); INVALID_ARGUMENT when it is not one.
absl::StatusOr<absl::Time> ExpiryOfCertificate(const std::string& pem);

// The flags every binary takes to choose its credentials.
inline constexpr char kTlsDirFlagHelp[] =
    "Directory with ca.crt, tls.crt and tls.key (a Kubernetes TLS Secret's layout): mutual TLS on "
    "every channel and server, re-read when the files change (docs/security.md)";
inline constexpr char kInsecureFlagHelp[] =
    "No TLS: anyone who reaches a port may call anything. Needed to run without --tls-dir";

// Credentials from --tls-dir, or none with --insecure (logged as a warning). INVALID_ARGUMENT
// unless exactly one of them is given; FromDirectory's errors; FAILED_PRECONDITION when the
// certificate is not of `role` (none: any role will do), so a misplaced Secret stops the process at
// start, saying so, instead of every call it makes being refused.
absl::StatusOr<Credentials> CredentialsFromFlags(const std::string& tls_dir, bool insecure,
                                                 std::optional<Role> role);

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_CREDENTIALS_H_
