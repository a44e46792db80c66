import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# NOISY NEIGHBOUR (not part of the honest corpus): an honest ReLU that, during its first
# SPIN_CALLS forward calls (the judge's correctness calls), also launches a kernel that keeps every
# SM busy for about SPIN_US microseconds on a non-blocking side stream it never waits for.
# Used by bench/fidelity/fidelity.py to load the GPU while other candidates are judged.
noise_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define SPIN_CALLS 16
#define SPIN_US 20000

__global__ void spin_kernel(long long cycles, float* sink) {
    long long start = clock64();
    float acc = threadIdx.x;
    while (clock64() - start < cycles) acc = acc * 1.0000001f + 0.5f;
    if (acc == -1.0f) sink[0] = acc;   // never true: keeps the loop
}

__global__ void relu_kernel(const float* x, float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

static cudaStream_t side_stream = nullptr;
static int calls = 0;

torch::Tensor noisy_relu_cuda(torch::Tensor x) {
    x = x.contiguous();
    auto y = torch::empty_like(x);
    long long n = x.numel();
    if (calls++ < SPIN_CALLS) {
        if (!side_stream) cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking);
        int dev, sms, khz;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
        long long cycles = (long long)khz * SPIN_US / 1000;
        spin_kernel<<<sms * 8, 256, 0, side_stream>>>(cycles, y.data_ptr<float>());
    }
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

noise_cpp_source = "torch::Tensor noisy_relu_cuda(torch::Tensor x);"

noise = load_inline(
    name="noise_spin_sms_relu",
    cpp_sources=noise_cpp_source,
    cuda_sources=noise_source,
    functions=["noisy_relu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.noise = noise

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.noise.noisy_relu_cuda(x)
