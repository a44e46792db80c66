#include <torch/extension.h>

template <typename scalar_t>
__global__ void rowsum_kernel(const torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> x,
                              torch::PackedTensorAccessor32<scalar_t, 1, torch::RestrictPtrTraits> out) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < x.size(0)) {
        scalar_t acc = 0;
        for (int j = 0; j < x.size(1); ++j) acc += x[row][j];
        out[row] = acc;
    }
}

torch::Tensor forward(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "rowsum", ([&] {
        rowsum_kernel<scalar_t><<<(x.size(0) + 127) / 128, 128>>>(
            x.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(),
            out.packed_accessor32<scalar_t, 1, torch::RestrictPtrTraits>());
    }));
    return out;
}
