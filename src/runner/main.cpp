// kjudge-runner --request FILE --report FILE
// Reads a binary kjudge.v1.RunnerRequest, builds or runs one native kernel, writes a binary
// kjudge.v1.RunnerReport. Exit status: 0 report written with ok=true; 1 report written with
// ok=false; 2 usage error, unreadable request or unwritable report. A kernel that crashes kills the
// process (the daemon sees the signal); the report is written only at the end and atomically, and a
// stale one is removed first, so a crash never leaves a report behind.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kjudge/v1/runner.pb.h"
#include "runner/backends.h"
#include "runner/error.h"
#include "runner/files.h"

namespace {

namespace v1 = kjudge::v1;
using kjudge::runner::DeviceUnavailable;
using kjudge::runner::RunnerError;

enum Exit : int { kExitOk = 0, kExitFailed = 1, kExitUsage = 2 };

void execute(const v1::RunnerRequest& req, v1::RunnerReport& report) {
  const bool build = req.mode() == v1::RunnerRequest::BUILD;
  if (!build && req.mode() != v1::RunnerRequest::RUN) throw RunnerError("mode must be BUILD or RUN");
  switch (req.language()) {
    case v1::CPP:
      if (build) throw RunnerError("BUILD mode is OpenCL-only");
      return kjudge::runner::run_cpp(req, report);
    case v1::CUDA:
      if (build) throw RunnerError("BUILD mode is OpenCL-only (CUDA is built by nvcc in the compile sandbox)");
      return kjudge::runner::run_cuda(req, report);
    case v1::OPENCL:
      return build ? kjudge::runner::build_opencl(req, report) : kjudge::runner::run_opencl(req, report);
    default:
      throw RunnerError(fmt::format("language {} is not supported by kjudge-runner",
                                    v1::Language_Name(req.language())));
  }
}

}  // namespace

int main(int argc, char** argv) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  CLI::App app{"Runs one native kernel as a kjudge.v1.RunnerRequest says; meant to run in a sandbox."};
  std::string request_path;
  std::string report_path;
  app.add_option("--request", request_path, "binary kjudge.v1.RunnerRequest")->required();
  app.add_option("--report", report_path, "where to write the binary kjudge.v1.RunnerReport")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  std::error_code ignored;
  std::filesystem::remove(report_path, ignored);

  v1::RunnerRequest request;
  try {
    if (!request.ParseFromString(kjudge::runner::read_file(request_path, "request"))) {
      throw RunnerError(fmt::format("{} is not a kjudge.v1.RunnerRequest", request_path));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjudge-runner: %s\n", e.what());
    return kExitUsage;
  }

  // The request names the audited calls: take it out of the kernel's sight (the file lives in the
  // candidate's /job). What stays in this process's memory is documented as forgeable.
  if (request.mode() == v1::RunnerRequest::RUN) std::filesystem::remove(request_path, ignored);

  v1::RunnerReport report;
  try {
    execute(request, report);
    report.set_ok(true);
  } catch (const DeviceUnavailable& e) {
    report.set_ok(false);
    report.set_error(e.what());
    report.set_device_unavailable(true);
  } catch (const std::exception& e) {  // RunnerError, and bad_alloc & co. from the libraries
    report.set_ok(false);
    report.set_error(e.what());
  }

  try {
    std::string bytes;
    if (!report.SerializeToString(&bytes)) throw RunnerError("cannot serialize the report");
    kjudge::runner::write_file_atomic(report_path, bytes, "report");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjudge-runner: %s\n", e.what());
    return kExitUsage;
  }
  return report.ok() ? kExitOk : kExitFailed;
}
