import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# kl_div(log(p), t, reduction='batchmean') = sum(t * (log t - log p)) / batch.
# The log of the predictions is fused into the reduction (no log(p) tensor is materialised);
# terms with t == 0 contribute 0 as in torch (xlogy).
kl_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__inline__ __device__ float warp_reduce_sum(float val) {
    for (int offset = 16; offset > 0; offset /= 2) val += __shfl_down_sync(0xffffffff, val, offset);
    return val;
}

__global__ void kl_div_kernel(const float* __restrict__ pred, const float* __restrict__ targ, long long n,
                              double* __restrict__ acc) {
    float sum = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float t = targ[i];
        if (t > 0.0f) sum += t * (logf(t) - logf(pred[i]));
    }
    static __shared__ float shared[32];
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    sum = warp_reduce_sum(sum);
    if (lane == 0) shared[wid] = sum;
    __syncthreads();
    sum = (threadIdx.x < blockDim.x / 32) ? shared[lane] : 0.0f;
    if (wid == 0) {
        sum = warp_reduce_sum(sum);
        if (lane == 0) atomicAdd(acc, (double)sum);
    }
}

__global__ void batchmean_kernel(const double* acc, float* out, long long batch) { *out = (float)(*acc / (double)batch); }

torch::Tensor kl_div_cuda(torch::Tensor predictions, torch::Tensor targets) {
    predictions = predictions.contiguous();
    targets = targets.contiguous();
    TORCH_CHECK(predictions.sizes() == targets.sizes(), "shape mismatch");
    long long n = predictions.numel();
    long long batch = predictions.size(0);
    auto acc = torch::zeros({1}, predictions.options().dtype(torch::kFloat64));
    auto out = torch::empty({}, predictions.options());
    int blocks = 1024, threads = 256;
    kl_div_kernel<<<blocks, threads>>>(predictions.data_ptr<float>(), targets.data_ptr<float>(), n, acc.data_ptr<double>());
    batchmean_kernel<<<1, 1>>>(acc.data_ptr<double>(), out.data_ptr<float>(), batch);
    return out;
}
"""

kl_cpp_source = "torch::Tensor kl_div_cuda(torch::Tensor predictions, torch::Tensor targets);"

kl_div = load_inline(
    name="kl_div_fused_batchmean",
    cpp_sources=kl_cpp_source,
    cuda_sources=kl_source,
    functions=["kl_div_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.kl_div = kl_div

    def forward(self, predictions, targets):
        return self.kl_div.kl_div_cuda(predictions, targets)
