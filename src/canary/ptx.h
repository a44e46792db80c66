// The canary kernel, as PTX text so kjudge-canary needs no nvcc at run time: the driver JITs it
// (cuModuleLoadData) for whatever GPU it finds.
//
// Generated once from
//   extern "C" __global__ void kj_canary_saxpy(unsigned n, float a, const float* __restrict__ x,
//                                              float* __restrict__ y) {
//     for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
//       y[i] = a * x[i] + y[i];
//   }
// with `nvcc -ptx -arch=compute_75 canary.cu` (CUDA 13.0), then ".version 9.0 / .target sm_75"
// lowered by hand to ".version 7.0 / .target sm_70": the code uses nothing newer, and PTX ISA 7.0
// (CUDA 11.0) is JIT-compiled by every driver since r450, so an older driver on an H100/H200 node
// still loads it. Checked with `ptxas -arch=sm_90` and `-arch=sm_100` (tests/daemon: CanaryPtx).
#pragma once

namespace kjudge::canary {

inline constexpr const char* kKernelName = "kj_canary_saxpy";

inline constexpr const char* kPtx = R"PTX(
.version 7.0
.target sm_70
.address_size 64

	// .globl	kj_canary_saxpy

.visible .entry kj_canary_saxpy(
	.param .u32 kj_canary_saxpy_param_0,
	.param .f32 kj_canary_saxpy_param_1,
	.param .u64 kj_canary_saxpy_param_2,
	.param .u64 kj_canary_saxpy_param_3
)
{
	.reg .pred 	%p<3>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<11>;
	.reg .b64 	%rd<8>;


	ld.param.u32 	%r6, [kj_canary_saxpy_param_0];
	ld.param.f32 	%f1, [kj_canary_saxpy_param_1];
	ld.param.u64 	%rd3, [kj_canary_saxpy_param_2];
	ld.param.u64 	%rd4, [kj_canary_saxpy_param_3];
	mov.u32 	%r1, %ntid.x;
	mov.u32 	%r7, %ctaid.x;
	mov.u32 	%r8, %tid.x;
	mad.lo.s32 	%r10, %r7, %r1, %r8;
	setp.ge.u32 	%p1, %r10, %r6;
	@%p1 bra 	$L__BB0_3;

	mov.u32 	%r9, %nctaid.x;
	mul.lo.s32 	%r3, %r1, %r9;
	cvta.to.global.u64 	%rd1, %rd3;
	cvta.to.global.u64 	%rd2, %rd4;

$L__BB0_2:
	mul.wide.u32 	%rd5, %r10, 4;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.nc.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd2, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;
	add.s32 	%r10, %r10, %r3;
	setp.lt.u32 	%p2, %r10, %r6;
	@%p2 bra 	$L__BB0_2;

$L__BB0_3:
	ret;

}

)PTX";

}  // namespace kjudge::canary
