// A throw-away certificate authority made with Debian's openssl: the certificates `syncopate local`
// runs its processes with, and `syncopate certs` for a deployment made by hand (docs/security.md).
// Each certificate carries its process's identity (rpc/identity.h) and, for servers dialled by
// address, 127.0.0.1 and localhost (clients check the server's role, not its host name).
#ifndef SYNCOPATE_CLI_CERTIFICATES_H_
#define SYNCOPATE_CLI_CERTIFICATES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rpc/identity.h"

namespace syncopate::cli {

// The CA's files in its directory; the CA key never leaves it.
inline constexpr char kCaKeyFile[] = "ca.key";

// Not thread-safe (it runs openssl in its directory).
class CertificateAuthority {
 public:
  // Makes a new CA (an ECDSA P-256 key and a self-signed certificate valid for `validity`) in
  // `dir`, created if missing. ALREADY_EXISTS when `dir` holds a CA, unless `replace`;
  // INVALID_ARGUMENT for a bad trust domain; FAILED_PRECONDITION when openssl is not installed;
  // INTERNAL with openssl's output when it fails.
  static absl::StatusOr<CertificateAuthority> Create(const std::string& dir,
                                                     const std::string& trust_domain,
                                                     absl::Duration validity, bool replace);
  // A CA made before in `dir`. NOT_FOUND when its files are missing.
  static absl::StatusOr<CertificateAuthority> Open(const std::string& dir,
                                                   const std::string& trust_domain);

  const std::string& dir() const { return dir_; }

  // Issues a certificate for `identity` (valid for `validity`) into `out_dir` (created if missing)
  // as ca.crt, tls.crt and tls.key: links through out_dir/..data to a new version folder, swapped
  // in one rename, so a process watching the directory (rpc::Credentials) takes the new files
  // together at its next refresh. The validity is cut to end before the CA's own certificate
  // does. INVALID_ARGUMENT for a bad name; FAILED_PRECONDITION when the CA has less than 25 hours
  // left; INTERNAL with openssl's output when it fails.
  absl::Status Issue(const rpc::Identity& identity, const std::string& out_dir,
                     absl::Duration validity = absl::Hours(24 * 30)) const;

 private:
  // Makes the key, certificate (serial `serial`) and ca.crt of `identity` (SAN `uri`) in `work`.
  absl::Status Make(const rpc::Identity& identity, const std::string& uri,
                    const std::string& serial, const std::string& work,
                    absl::Duration validity) const;
  CertificateAuthority(std::string dir, std::string trust_domain)
      : dir_(std::move(dir)), trust_domain_(std::move(trust_domain)) {}

  std::string dir_;
  std::string trust_domain_;
};

// `syncopate certs ca|issue`.
struct CertsCommand {
  bool issue = false;  // false: make a CA
  bool force = false;  // ca: replace a CA already there
  std::string ca_dir;
  std::string trust_domain = rpc::kDefaultTrustDomain;
  int days = 30;
  std::string role;  // issue: the identity, a name or the whole pool
  std::string name;
  bool pool = false;
  std::string out_dir;
};
// What was made, for the user ("issued trainer trainer-3 (spiffe://...) into DIR"); the errors of
// CertificateAuthority, INVALID_ARGUMENT for a bad role.
absl::StatusOr<std::string> RunCerts(const CertsCommand& command);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_CERTIFICATES_H_
