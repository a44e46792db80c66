#include <torch/extension.h>
#include <cuda_bf16.h>

__global__ void gelu_bf16_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        y[i] = __float2bfloat16(0.5f * v * (1.f + erff(v * 0.70710678f)));
    }
}

torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kBFloat16, "bfloat16 input");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    gelu_bf16_kernel<<<(n + 255) / 256, 256>>>(reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<c10::BFloat16>()),
                                               reinterpret_cast<__nv_bfloat16*>(y.data_ptr<c10::BFloat16>()), n);
    return y;
}
