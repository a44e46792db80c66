// Pieces of the CUDA backend that need no GPU (unit-tested on any machine): launch-configuration
// checks and the packing of kernel parameters for cuLaunchKernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kjudge/v1/job.pb.h"
#include "runner/args.h"

namespace kjudge::runner {

// Kernel mode (launch.grid set): the artifact is a cubin/fatbin and `entry` an extern "C" __global__
// function launched with grid/block/shared_mem_bytes. Host mode (grid and block empty): the artifact
// is a shared object and `entry` an extern "C" host function taking device pointers and scalars.
bool cuda_kernel_mode(const kjudge::v1::LaunchConfig& launch);

// A message when the launch configuration cannot be launched as declared; nullopt when it can.
std::optional<std::string> check_cuda_launch(const kjudge::v1::LaunchConfig& launch);

// kernelParams for cuLaunchKernel: one pointer per argument, to device_ptrs[i] for tensors and to the
// scalar's value otherwise. `device_ptrs` has one entry per argument and must outlive the result.
std::vector<void*> pack_kernel_params(std::vector<HostArg>& args, std::vector<std::uint64_t>& device_ptrs);

}  // namespace kjudge::runner
