#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float v = static_cast<float>(x[i]);
        y[i] = static_cast<scalar_t>(v > 0.f ? v : 0.f);
    }
}

torch::Tensor forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int threads = 512;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 4096);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "relu_forward", [&] {
        relu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
