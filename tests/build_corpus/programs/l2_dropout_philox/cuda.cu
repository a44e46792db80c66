#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/PhiloxUtils.cuh>
#include <curand_kernel.h>
#include <mutex>

__global__ void dropout_kernel(const float* x, float* y, int64_t n, float p, at::PhiloxCudaState philox) {
    auto seeds = at::cuda::philox::unpack(philox);
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t state;
    curand_init(std::get<0>(seeds), i, std::get<1>(seeds), &state);
    if (i < n) {
        float r = curand_uniform(&state);
        y[i] = r > p ? x[i] / (1.f - p) : 0.f;
    }
}

torch::Tensor forward(torch::Tensor x, double p) {
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    auto gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(std::nullopt, at::cuda::detail::getDefaultCUDAGenerator());
    at::PhiloxCudaState rng;
    {
        std::lock_guard<std::mutex> lock(gen->mutex_);
        rng = gen->philox_cuda_state(4);
    }
    dropout_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                                                   n, (float)p, rng);
    return y;
}
