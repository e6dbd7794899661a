#include "cli/certificates.h"

#include <unistd.h>

#include <algorithm>
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

}  // namespace

absl::StatusOr<CertificateAuthority> CertificateAuthority::Create(const std::string& dir,
                                                                  const std::string& trust_domain,
                                                                  absl::Duration validity,
                                                                  bool replace) {
  RETURN_IF_ERROR(rpc::SpiffeId(trust_domain, {rpc::Role::kOperator, ""}).status());
  if (!replace && access(absl::StrCat(dir, "/", kCaKeyFile).c_str(), F_OK) == 0) {
    return absl::AlreadyExistsError(absl::StrCat(
        dir,
        " already holds a CA: its certificates would no longer be trusted (--force replaces "
        "it)"));
  }
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

absl::Status CertificateAuthority::Make(const rpc::Identity& identity, const std::string& uri,
                                        const std::string& serial, const std::string& work,
                                        absl::Duration validity) const {
  const std::string log = absl::StrCat(work, "/openssl.log");
  RETURN_IF_ERROR(base::WriteFileAtomically(
      absl::StrCat(work, "/ext.cnf"),
      absl::StrCat("subjectAltName=URI:", uri, ",IP:127.0.0.1,DNS:localhost\n",
                   "basicConstraints=critical,CA:FALSE\n", "keyUsage=critical,digitalSignature\n",
                   "extendedKeyUsage=serverAuth,clientAuth\n")));
  // The identity is in the URI; the subject names only the role (a name may exceed the 64
  // characters a common name can hold).
  RETURN_IF_ERROR(Openssl(
      {"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", absl::StrCat(work, "/", rpc::kKeyFile), "-out", absl::StrCat(work, "/tls.csr"),
       "-subj", absl::StrCat("/O=Syncopate/CN=", rpc::RoleName(identity.role))},
      log));
  RETURN_IF_ERROR(
      Openssl({"x509", "-req", "-in", absl::StrCat(work, "/tls.csr"), "-CA",
               absl::StrCat(dir_, "/", rpc::kCaFile), "-CAkey", absl::StrCat(dir_, "/", kCaKeyFile),
               "-set_serial", absl::StrCat("0x", serial), "-days", Days(validity), "-out",
               absl::StrCat(work, "/", rpc::kCertFile), "-extfile", absl::StrCat(work, "/ext.cnf")},
              log));
  ASSIGN_OR_RETURN(std::string ca, base::ReadFile(absl::StrCat(dir_, "/", rpc::kCaFile)));
  RETURN_IF_ERROR(base::WriteFileAtomically(absl::StrCat(work, "/", rpc::kCaFile), ca));
  std::error_code ignored;
  for (const char* scratch : {"tls.csr", "ext.cnf", "openssl.log"}) {
    std::filesystem::remove(absl::StrCat(work, "/", scratch), ignored);
  }
  return absl::OkStatus();
}

absl::Status CertificateAuthority::Issue(const rpc::Identity& identity, const std::string& out_dir,
                                         absl::Duration validity) const {
  namespace fs = std::filesystem;
  ASSIGN_OR_RETURN(std::string uri, rpc::SpiffeId(trust_domain_, identity));
  // A certificate must not outlive the CA that vouches for it.
  ASSIGN_OR_RETURN(const std::string ca_pem, base::ReadFile(absl::StrCat(dir_, "/", rpc::kCaFile)));
  ASSIGN_OR_RETURN(const absl::Time ca_expiry, rpc::ExpiryOfCertificate(ca_pem));
  // An hour's margin: openssl counts the days from its own start, a little later.
  const absl::Duration left = ca_expiry - absl::Now() - absl::Hours(1);
  if (left < absl::Hours(24)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CA in ", dir_, " expires ", absl::FormatTime(ca_expiry, absl::UTCTimeZone()),
        ", in less than 25 hours: make a new one (syncopate certs ca --force) and issue again"));
  }
  validity = std::min(validity, left);
  RETURN_IF_ERROR(base::MakeDirectories(out_dir));
  // Each issue goes into a version folder of its own; the files the process reads are links
  // through "..data", which one rename swaps to the new version (the layout Kubernetes gives a
  // mounted Secret), so the three files change together.
  std::random_device entropy;
  const std::string serial = absl::StrFormat("%08x%08x%08x", entropy(), entropy(), entropy());
  const std::string version = absl::StrCat("..", serial);
  const std::string work = absl::StrCat(out_dir, "/", version);
  RETURN_IF_ERROR(base::MakeDirectories(work));
  if (absl::Status made = Make(identity, uri, serial, work, validity); !made.ok()) {
    std::error_code ignored;
    fs::remove_all(work, ignored);
    return made;
  }
  std::error_code error;
  // The version in use until now stays (a process may be reading it); older ones go.
  const fs::path previous = fs::read_symlink(absl::StrCat(out_dir, "/..data"), error);
  // Swap ..data to the new version, then make sure each file is a link through it.
  auto relink = [&](const std::string& target, const std::string& link) -> absl::Status {
    const std::string temporary = link + ".new";
    fs::remove(temporary, error);
    fs::create_symlink(target, temporary, error);
    if (!error) fs::rename(temporary, link, error);
    if (error) {
      return absl::InternalError(absl::StrCat("cannot link ", link, ": ", error.message()));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(relink(version, absl::StrCat(out_dir, "/..data")));
  for (const char* file : {rpc::kCaFile, rpc::kCertFile, rpc::kKeyFile}) {
    const std::string path = absl::StrCat(out_dir, "/", file);
    const std::string target = absl::StrCat("..data/", file);
    if (fs::read_symlink(path, error) != target) RETURN_IF_ERROR(relink(target, path));
  }
  for (fs::directory_iterator it(out_dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 2 && name.rfind("..", 0) == 0 && name != "..data" && name != version &&
        name != previous.string() && !it->is_symlink(error)) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunCerts(const CertsCommand& command) {
  const absl::Duration validity = absl::Hours(24) * command.days;
  if (!command.issue) {
    ASSIGN_OR_RETURN(CertificateAuthority ca,
                     CertificateAuthority::Create(command.ca_dir, command.trust_domain, validity,
                                                  command.force));
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
