#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cfloat>

__global__ void softmax_kernel(const float* x, float* y, int rows, int cols) {
    extern __shared__ float buf[];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + (int64_t)r * cols;
        float m = -FLT_MAX;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
        buf[threadIdx.x] = m;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
            __syncthreads();
        }
        m = buf[0];
        __syncthreads();
        float sum = 0.f;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += __expf(xr[j] - m);
        buf[threadIdx.x] = sum;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
            __syncthreads();
        }
        sum = buf[0];
        __syncthreads();
        for (int j = threadIdx.x; j < cols; j += blockDim.x) y[(int64_t)r * cols + j] = __expf(xr[j] - m) / sum;
    }
}

torch::Tensor forward(torch::Tensor x) {
    const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
    const int threads = std::min(256, prop->maxThreadsPerBlock);
    const int rows = x.size(0), cols = x.size(1);
    const int blocks = std::min(rows, prop->multiProcessorCount * 8);
    auto y = torch::empty_like(x);
    softmax_kernel<<<blocks, threads, threads * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
