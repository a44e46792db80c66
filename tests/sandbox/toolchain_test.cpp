// The toolchains kjudge runs must work inside with default_system_binds(): g++, python3 + torch,
// OpenCL through PoCL.
#include "helpers.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;

class SandboxToolchain : public SandboxTest {};

TEST_F(SandboxToolchain, GxxCompilesAndRunsHelloWorld) {
  TempDir job;
  write_file(job.file("hello.cpp"),
             "#include <iostream>\nint main() { std::cout << \"hello from g++\" << std::endl; }\n");
  auto p = shell("g++ -O1 -o hello hello.cpp && ./hello");
  p.binds.push_back({job.path(), "/job", true});
  p.cwd = "/job";
  p.wall_limit = 60s;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "hello from g++\n");
  EXPECT_TRUE(exists(job.file("hello")));
}

TEST_F(SandboxToolchain, PythonImportsTorch) {
  if (!exists("/usr/lib/python3/dist-packages/torch")) GTEST_SKIP() << "no system torch";
  auto p = policy_for({"/usr/bin/python3", "-c", "import torch; print(torch.tensor([2, 3]).sum().item())"});
  p.wall_limit = 60s;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "5\n");
}

TEST_F(SandboxToolchain, OpenClKernelRunsOnPocl) {
  if (!exists("/etc/OpenCL/vendors") || !exists("/usr/include/CL/cl.h"))
    GTEST_SKIP() << "no OpenCL ICD or headers";
  TempDir job;
  write_file(job.file("sq.cpp"), R"(#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cstdio>
int main() {
  cl_platform_id p; cl_device_id d; cl_int e;
  if (clGetPlatformIDs(1, &p, nullptr) != CL_SUCCESS) return 2;
  if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, nullptr) != CL_SUCCESS) return 3;
  cl_context c = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &e);
  cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
  const char* src = "__kernel void sq(__global int* a) { int i = get_global_id(0); a[i] *= a[i]; }";
  cl_program pr = clCreateProgramWithSource(c, 1, &src, nullptr, &e);
  if (clBuildProgram(pr, 1, &d, nullptr, nullptr, nullptr) != CL_SUCCESS) return 4;
  cl_kernel k = clCreateKernel(pr, "sq", &e);
  int a[4] = {1, 2, 3, 4};
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &e);
  clSetKernelArg(k, 0, sizeof m, &m);
  size_t g = 4;
  clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, nullptr, 0, nullptr, nullptr);
  clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof a, a, 0, nullptr, nullptr);
  printf("%d %d %d %d\n", a[0], a[1], a[2], a[3]);
}
)");
  auto p = shell("g++ -o sq sq.cpp -lOpenCL && ./sq");
  p.binds.push_back({job.path(), "/job", true});
  p.cwd = "/job";
  p.env["POCL_CACHE_DIR"] = "/tmp";
  p.wall_limit = 60s;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "1 4 9 16\n");
}

}  // namespace
}  // namespace kjtest
