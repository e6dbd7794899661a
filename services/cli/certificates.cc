#include "cli/certificates.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "cli/child_process.h"
#include "rpc/credentials.h"

namespace syncopate::cli {
namespace {

constexpr absl::Duration kOpensslTimeout = absl::Seconds(30);

absl::StatusOr<std::string> FindOpenssl() {
  const char* path = getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(dir, "/openssl");
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::FailedPreconditionError(
      "openssl is not installed (Debian: apt-get install openssl); it makes the certificates "
      "(or run with --insecure)");
}

// Runs openssl with `args`, its output logged to `log`; INTERNAL with the log's tail on failure.
absl::Status Openssl(const std::vector<std::string>& args, const std::string& log) {
  ASSIGN_OR_RETURN(std::string openssl, FindOpenssl());
  std::vector<std::string> argv = {openssl};
  argv.insert(argv.end(), args.begin(), args.end());
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> process, ChildProcess::Spawn(argv, {}, log));
  const int status = process->WaitOrKill(kOpensslTimeout);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  absl::StatusOr<std::string> output = base::ReadFile(log);
  std::string tail = output.ok() ? *output : "";
  if (tail.size() > 2000) tail = tail.substr(tail.size() - 2000);
  return absl::InternalError(
      absl::StrCat("openssl ", args.front(), " failed (", DescribeExit(status), "): ", tail));
}

std::string Days(absl::Duration validity) {
  return absl::StrCat(std::max<int64_t>(1, absl::ToInt64Hours(validity) / 24));
}

absl::Status Rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", from, " to ", to));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CertificateAuthority> CertificateAuthority::Create(const std::string& dir,
                                                                  const std::string& trust_domain,
                                                                  absl::Duration validity) {
  RETURN_IF_ERROR(rpc::SpiffeId(trust_domain, {rpc::Role::kOperator, ""}).status());
  RETURN_IF_ERROR(base::MakeDirectories(dir));
  RETURN_IF_ERROR(Openssl(
      {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", absl::StrCat(dir, "/", kCaKeyFile), "-out", absl::StrCat(dir, "/", rpc::kCaFile),
       "-days", Days(validity), "-subj", absl::StrCat("/O=Syncopate/CN=", trust_domain, " CA"),
       "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
       "keyUsage=critical,keyCertSign,cRLSign"},
      absl::StrCat(dir, "/openssl.log")));
  return CertificateAuthority(dir, trust_domain);
}

absl::StatusOr<CertificateAuthority> CertificateAuthority::Open(const std::string& dir,
                                                                const std::string& trust_domain) {
  RETURN_IF_ERROR(rpc::SpiffeId(trust_domain, {rpc::Role::kOperator, ""}).status());
  for (const char* file : {rpc::kCaFile, kCaKeyFile}) {
    if (access(absl::StrCat(dir, "/", file).c_str(), R_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("no CA in ", dir, ": ", file, " is missing"));
    }
  }
  return CertificateAuthority(dir, trust_domain);
}

absl::Status CertificateAuthority::Issue(const rpc::Identity& identity, const std::string& out_dir,
                                         absl::Duration validity) const {
  ASSIGN_OR_RETURN(std::string uri, rpc::SpiffeId(trust_domain_, identity));
  const std::string work = absl::StrCat(out_dir, "/.issuing");
  RETURN_IF_ERROR(base::MakeDirectories(work));
  const std::string log = absl::StrCat(work, "/openssl.log");
  RETURN_IF_ERROR(base::WriteFileAtomically(
      absl::StrCat(work, "/ext.cnf"),
      absl::StrCat("subjectAltName=URI:", uri, ",IP:127.0.0.1,DNS:localhost\n",
                   "basicConstraints=critical,CA:FALSE\n", "keyUsage=critical,digitalSignature\n",
                   "extendedKeyUsage=serverAuth,clientAuth\n")));
  const std::string common_name =
      identity.name.empty() ? rpc::RoleName(identity.role) : identity.name;
  RETURN_IF_ERROR(
      Openssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
               "-keyout", absl::StrCat(work, "/", rpc::kKeyFile), "-out",
               absl::StrCat(work, "/tls.csr"), "-subj",
               absl::StrCat("/O=Syncopate/OU=", rpc::RoleName(identity.role), "/CN=", common_name)},
              log));
  std::random_device entropy;
  const std::string serial = absl::StrFormat("0x%08x%08x%08x", entropy(), entropy(), entropy());
  RETURN_IF_ERROR(
      Openssl({"x509", "-req", "-in", absl::StrCat(work, "/tls.csr"), "-CA",
               absl::StrCat(dir_, "/", rpc::kCaFile), "-CAkey", absl::StrCat(dir_, "/", kCaKeyFile),
               "-set_serial", serial, "-days", Days(validity), "-out",
               absl::StrCat(work, "/", rpc::kCertFile), "-extfile", absl::StrCat(work, "/ext.cnf")},
              log));
  ASSIGN_OR_RETURN(std::string ca, base::ReadFile(absl::StrCat(dir_, "/", rpc::kCaFile)));
  RETURN_IF_ERROR(base::WriteFileAtomically(absl::StrCat(out_dir, "/", rpc::kCaFile), ca));
  for (const char* file : {rpc::kKeyFile, rpc::kCertFile}) {
    RETURN_IF_ERROR(Rename(absl::StrCat(work, "/", file), absl::StrCat(out_dir, "/", file)));
  }
  std::error_code ignored;
  std::filesystem::remove_all(work, ignored);
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunCerts(const CertsCommand& command) {
  const absl::Duration validity = absl::Hours(24) * command.days;
  if (!command.issue) {
    ASSIGN_OR_RETURN(CertificateAuthority ca,
                     CertificateAuthority::Create(command.ca_dir, command.trust_domain, validity));
    return absl::StrCat("made a CA for trust domain ", command.trust_domain, " in ", ca.dir(),
                        " (keep ", kCaKeyFile, " there, private)");
  }
  ASSIGN_OR_RETURN(rpc::Role role, rpc::ParseRole(command.role));
  if (command.name.empty() == !command.pool) {
    return absl::InvalidArgumentError("give either --name (one process) or --pool (any name)");
  }
  const rpc::Identity identity{role, command.name};
  ASSIGN_OR_RETURN(std::string uri, rpc::SpiffeId(command.trust_domain, identity));
  ASSIGN_OR_RETURN(CertificateAuthority ca,
                   CertificateAuthority::Open(command.ca_dir, command.trust_domain));
  RETURN_IF_ERROR(ca.Issue(identity, command.out_dir, validity));
  return absl::StrCat("issued ", identity.ToString(), " (", uri, ") into ", command.out_dir);
}

}  // namespace syncopate::cli
