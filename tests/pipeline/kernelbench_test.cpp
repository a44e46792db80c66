// KernelBench-format decisions without a sandbox: the legality classification (data), the
// verdicts it leads to, the static policy's reject, the harness's failures, the daemon's clock
// span, torch.allclose-exact comparison (compat mode) and job validation.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "pipeline/checks/compare.h"
#include "pipeline/kernelbench/baseline_cache.h"
#include "pipeline/kernelbench/build.h"
#include "pipeline/kernelbench/checks.h"
#include "pipeline/timing/speedup.h"
#include "pipeline/timing/loop_drift.h"
#include "pipeline/timing/loop_marks.h"
#include "pipeline/kernelbench/legality.h"
#include "pipeline/job/validate.h"
#include "pipeline/verdict/verdict.h"

namespace {
namespace v1 = kjudge::v1;
using nlohmann::json;

kj::LegalityTrace trace(std::vector<std::string> ops, std::vector<std::string> kernels, int ext_calls, bool gpu) {
  kj::LegalityTrace t;
  t.ops = std::move(ops);
  t.kernels = std::move(kernels);
  t.ext_calls = ext_calls;
  t.tracer_ok = true;
  t.profiled_kernels = gpu;
  return t;
}

// The kernels a GPU run's trace recorded, no dispatcher ops, classified.
kj::LegalityClass classify_kernels(std::vector<std::string> kernels) {
  return kj::classify_legality(trace({}, std::move(kernels), 0, true));
}

TEST(KernelBenchLegality, PlumbingIsAllowedComputeIsNot) {
  const auto c = kj::classify_legality(trace({"aten::empty_like", "aten::view", "aten::mm", "aten::mm", "aten::relu"}, {}, 1, false));
  EXPECT_EQ(c.forbidden_ops, (std::vector<std::string>{"aten::mm", "aten::relu"}));  // distinct, first-seen order
  EXPECT_EQ(c.custom_ops, 0u);
  EXPECT_FALSE(kj::legality_policy_version().empty());
}

TEST(KernelBenchLegality, OpsInTheCandidatesOwnNamespaceAreCustomWork) {
  const auto t = trace({"myext::fused_relu", "aten::empty"}, {}, 0, false);
  const auto c = kj::classify_legality(t);
  EXPECT_TRUE(c.forbidden_ops.empty());
  EXPECT_EQ(c.custom_ops, 1u);
  EXPECT_FALSE(kj::decide_legality(t, c, false));
}

TEST(KernelBenchLegality, KernelsAreLibraryFrameworkOrCustomByVendorNaming) {
  const auto c = classify_kernels({"ampere_sgemm_128x64_nn", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32",
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
      "kb_gemm_kernel(float const*, float const*, float*, int, int, int)",
      "sgemm_tiled_kernel(float const*, float const*, float*, int, int, int)", "Memcpy HtoD (Pageable -> Device)"});
  EXPECT_EQ(c.library_kernels, 2u);
  EXPECT_EQ(c.framework_kernels, 1u);
  EXPECT_EQ(c.custom_kernels, 2u);  // a candidate's kernel named *gemm* or sgemm_* is still its own
}

// Found on an H100 (rlstep, 2026-11-27): honest reductions named sum_reduce_kernel and
// argmax_reduce_kernel were DECOY, a bare "reduce_kernel" pattern calling them the framework's.
TEST(KernelBenchLegality, AKernelIsNamedByItsOwnQualifiedNameNotByAWordInIt) {
  const auto c = classify_kernels({"sum_reduce_kernel(float const*, float*, long long, long long, long long)",
      "void relu_elementwise_kernel<float>(at::GenericPackedTensorAccessor<float, 3ul, at::RestrictPtrTraits, int>)",
      "void add_kernel<c10::Half>(c10::Half const*, c10::Half*, int)", "conv_fprop_kernel(float const*, float*)",
      "my_sm90_gemm(float const*, float*)", "void mykb::(anonymous namespace)::conv_winograd_tile(float*)",
      "_Z17sum_reduce_kernelPKfPfxxx"});
  EXPECT_EQ(c.custom_kernels, 7u);
  EXPECT_EQ(c.library_kernels + c.framework_kernels, 0u);

  const auto f = classify_kernels({"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)",
      "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 3, 128, 1>(float*, int)",
      "void at_cuda_detail::cub::DeviceScanKernel<float>(float*)", "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT0_",
      "triton_poi_fused_relu_0"});
  EXPECT_EQ(f.framework_kernels, 5u);
  EXPECT_EQ(f.custom_kernels, 0u);

  const auto l = classify_kernels({"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, float> >(float)",
      "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4::Params)",
      "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)",
      "void internal::gemvx::kernel<int, int, float>(float)", "_Z14gemv2T_kernelPf"});
  EXPECT_EQ(l.library_kernels, 5u);
  EXPECT_EQ(l.custom_kernels, 0u);
}

TEST(KernelBenchLegality, VerdictPrecedence) {
  auto broken = trace({"aten::mm"}, {}, 0, false);
  broken.tracer_ok = false;
  broken.tracer_problem = "the dispatch mode stack was changed during the call";
  EXPECT_EQ(kj::decide_legality(broken, kj::classify_legality(broken), false)->verdict, v1::UNVERIFIABLE);

  const auto fallback = trace({"aten::mm"}, {"my_kernel"}, 1, true);
  const auto d = kj::decide_legality(fallback, kj::classify_legality(fallback), false);
  EXPECT_EQ(d->verdict, v1::FALLBACK);
  EXPECT_NE(d->message.find("aten::mm"), std::string::npos);

  const auto cublas = trace({}, {"ampere_sgemm_64x32_nn", "my_kernel"}, 1, true);
  EXPECT_EQ(kj::decide_legality(cublas, kj::classify_legality(cublas), false)->verdict, v1::FALLBACK);
  EXPECT_FALSE(kj::decide_legality(cublas, kj::classify_legality(cublas), /*libraries_allowed=*/true));

  const auto decoy_gpu = trace({"aten::empty"}, {"Memcpy DtoH (Device -> Pageable)"}, 1, true);
  EXPECT_EQ(kj::decide_legality(decoy_gpu, kj::classify_legality(decoy_gpu), false)->verdict, v1::DECOY);
  const auto decoy_cpu = trace({"aten::empty"}, {}, 0, false);  // computed without the extension
  EXPECT_EQ(kj::decide_legality(decoy_cpu, kj::classify_legality(decoy_cpu), false)->verdict, v1::DECOY);
  const auto honest_cpu = trace({"aten::empty_like"}, {}, 1, false);
  EXPECT_FALSE(kj::decide_legality(honest_cpu, kj::classify_legality(honest_cpu), false));
}

TEST(KernelBenchVerdict, StaticPolicyRejectNamesRuleAndCheatClass) {
  v1::Result r;
  const json policy = {{"reject", {{"rule", "timer_patch"}, {"verdict", "CHEAT"}, {"cheat_class", "timer_patch"},
                                   {"line", 7}, {"message", "assigns torch.allclose"}}}};
  const auto d = kj::decide_static_policy(policy, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, v1::CHEAT);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_TIMER_PATCH);
  EXPECT_NE(d->message.find("timer_patch"), std::string::npos);
  EXPECT_NE(d->message.find("line 7"), std::string::npos);

  v1::Result r2;
  EXPECT_EQ(kj::decide_static_policy({{"reject", {{"rule", "inherits_reference"}, {"verdict", "FALLBACK"}}}}, r2)->verdict,
            v1::FALLBACK);
  EXPECT_EQ(r2.cheat_class(), v1::CHEAT_CLASS_UNSPECIFIED);
  EXPECT_FALSE(kj::decide_static_policy({{"reject", nullptr}, {"findings", json::array()}}, r2));
  // A verdict the policy may not hand out (OK) becomes CHEAT rather than passing the candidate.
  EXPECT_EQ(kj::decide_static_policy({{"reject", {{"rule", "x"}, {"verdict", "OK"}}}}, r2)->verdict, v1::CHEAT);
}

// The harness's one-line cause (diagnosis.py) is the message, not the traceback's last line: that
// can be the tail of a tensor printout, or ninja's "build stopped".
TEST(KernelBenchVerdict, HarnessMessageIsTheCause) {
  kjsandbox::Report exited;
  exited.outcome = kjsandbox::Outcome::Exited;
  exited.exit_code = 0;
  const json build_fail = {{"ok", false}, {"stage", "build"},
                           {"error", "Traceback ...\nmain.cpp:8:3: error: 'y' was not declared\nninja: build stopped: subcommand failed.\n"},
                           {"message", "C++ error at candidate.py:11: 'y' was not declared"}};
  auto d = kj::decide_harness(exited, &build_fail, kj::Party::Candidate, true, 1000, {});
  EXPECT_EQ(d->message, "candidate does not build: C++ error at candidate.py:11: 'y' was not declared");
  const json run_fail = {{"ok", false}, {"stage", "correctness"},
                         {"error", "Traceback ...\nTypeError: f(): incompatible\nInvoked with: tensor([[1.0,\n   2.0]])\n"},
                         {"message", "TypeError: f(): incompatible"}};
  d = kj::decide_harness(exited, &run_fail, kj::Party::Candidate, false, 1000, {});
  EXPECT_EQ(d->verdict, v1::RUNTIME_ERROR);
  EXPECT_EQ(d->message, "candidate failed (correctness): TypeError: f(): incompatible");
}

TEST(KernelBenchVerdict, HarnessFailures) {
  kjsandbox::Report exited;
  exited.outcome = kjsandbox::Outcome::Exited;
  exited.exit_code = 0;
  const json ok = {{"ok", true}};
  EXPECT_FALSE(kj::decide_harness(exited, &ok, kj::Party::Candidate, false, 1000, {}));
  const json build_fail = {{"ok", false}, {"stage", "build"}, {"error", "Traceback ...\nRuntimeError: Error building extension 'x'\n"}};
  auto d = kj::decide_harness(exited, &build_fail, kj::Party::Candidate, true, 1000, {});
  EXPECT_EQ(d->verdict, v1::COMPILE_ERROR);
  EXPECT_NE(d->message.find("Error building extension"), std::string::npos);
  const json cuda_fault = {{"ok", false}, {"stage", "correctness"},
                           {"error", "Traceback\ntorch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"}};
  d = kj::decide_harness(exited, &cuda_fault, kj::Party::Candidate, false, 1000, {});
  EXPECT_EQ(d->verdict, v1::CUDA_FAULT);
  EXPECT_NE(d->message.find("CUDA fault"), std::string::npos);
  const json assert_fail = {{"ok", false}, {"stage", "timing"},
                            {"error", "RuntimeError: CUDA error: device-side assert triggered\n"}};
  EXPECT_EQ(kj::decide_harness(exited, &assert_fail, kj::Party::Candidate, false, 1000, {})->verdict, v1::CUDA_FAULT);
  // out of memory and API misuse are runtime errors, not device faults
  const json cuda_oom = {{"ok", false}, {"stage", "correctness"},
                    {"error", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"}};
  EXPECT_EQ(kj::decide_harness(exited, &cuda_oom, kj::Party::Candidate, false, 1000, {})->verdict, v1::RUNTIME_ERROR);
  const json bad_launch = {{"ok", false}, {"stage", "correctness"}, {"error", "RuntimeError: CUDA error: invalid argument\n"}};
  EXPECT_EQ(kj::decide_harness(exited, &bad_launch, kj::Party::Candidate, false, 1000, {})->verdict, v1::RUNTIME_ERROR);
  EXPECT_EQ(kj::decide_harness(exited, &cuda_fault, kj::Party::Reference, false, 1000, {})->verdict, v1::INVALID_JOB);
  EXPECT_EQ(kj::decide_harness(exited, nullptr, kj::Party::Candidate, false, 1000, {})->verdict, v1::RUNTIME_ERROR);
  kjsandbox::Report timeout;
  timeout.outcome = kjsandbox::Outcome::WallTimeout;
  EXPECT_EQ(kj::decide_harness(timeout, nullptr, kj::Party::Candidate, false, 1000, {})->verdict, v1::TIMEOUT);
  kjsandbox::Report oom;
  oom.outcome = kjsandbox::Outcome::MemoryLimit;
  EXPECT_EQ(kj::decide_harness(oom, nullptr, kj::Party::Candidate, false, 1000, {})->verdict, v1::MEMORY_LIMIT);
}

TEST(KernelBenchChecks, TimedLoopsBracketEachCall) {
  using std::chrono::milliseconds;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<kj::ClockMark> marks = {{'S', t0},
                                            {'B', t0 + milliseconds(1)},
                                            {'T', t0 + milliseconds(3)},
                                            {'B', t0 + milliseconds(4)},
                                            {'T', t0 + milliseconds(8)},
                                            {'E', t0 + milliseconds(9)},
                                            {'S', t0 + milliseconds(20)},
                                            {'T', t0 + milliseconds(21)},
                                            {'E', t0 + milliseconds(22)}};
  const auto loops = kj::timed_loops(marks);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_NEAR(loops[0].span_ms, 9.0, 1e-9);
  EXPECT_EQ(loops[0].calls, 2u);
  ASSERT_EQ(loops[0].call_ms.size(), 2u);
  EXPECT_NEAR(loops[0].call_ms[0], 2.0, 1e-9);
  EXPECT_NEAR(loops[0].call_ms[1], 4.0, 1e-9);
  EXPECT_EQ(loops[1].calls, 1u);
  EXPECT_TRUE(loops[1].call_ms.empty());  // a call without its 'B' mark: no trusted figure for the loop
  EXPECT_TRUE(kj::timed_loops({{'S', t0}, {'T', t0}}).empty());  // never closed
}

// The daemon's clock decides when the in-process events undercount a call; otherwise the events
// (more precise) stand, and the interval covers both medians' spreads.
TEST(KernelBenchSpeedup, TheDaemonsClockReplacesEventsThatUndercount) {
  using nlohmann::json;
  const json base = {{"trial_ms", std::vector<double>(20, 2.0)}, {"method", "cuda_events"}};
  json cand = {{"trial_ms", std::vector<double>(20, 1.0)}, {"method", "cuda_events"}};
  kj::TimedLoop honest, forged;
  honest.calls = forged.calls = 20;
  honest.call_ms.assign(20, 1.05);  // the harness's 0.05 ms around each call
  forged.call_ms.assign(20, 2.05);  // the calls took twice what the events say
  kj::SpeedupFacts f;
  f.candidate = &cand;
  f.baseline = &base;
  f.harness_overhead_ms = 0.05;
  f.candidate_loop = &honest;
  v1::Performance perf;
  kj::set_speedup(perf, f);
  EXPECT_EQ(perf.speedup_source(), "events");
  EXPECT_NEAR(perf.speedup(), 2.0, 1e-9);
  EXPECT_NEAR(perf.trusted_call_ms(), 1.0, 1e-9);
  EXPECT_LE(perf.speedup_ci_low(), 2.0);
  EXPECT_GE(perf.speedup_ci_high(), 2.0);
  f.candidate_loop = &forged;
  v1::Performance trusted;
  kj::set_speedup(trusted, f);
  EXPECT_EQ(trusted.speedup_source(), "trusted_clock");
  EXPECT_NEAR(trusted.speedup(), 1.0, 1e-9);
  EXPECT_NEAR(*kj::harness_overhead_ms(base, honest), 0.0, 1e-9);  // 1.05 - 2.0 is clamped at 0
}

// A loop timed without the launch cover (or the persisting-L2 reset) says so in the result's
// flags, once however many loops carry it; a loop with no notes adds none.
TEST(KernelBenchSpeedup, ALoopsOwnNotesReachTheResultsFlagsOnce) {
  using nlohmann::json;
  v1::Result r;
  kj::note_loop_flags(json{{"trial_ms", {1.0}}, {"flags", {"launch_cover_unavailable"}}}, r);
  kj::note_loop_flags(json{{"flags", {"launch_cover_unavailable", "persisting_l2_reset_unavailable"}}}, r);
  kj::note_loop_flags(json{{"trial_ms", {1.0}}}, r);
  ASSERT_EQ(r.legality().flags_size(), 2);
  EXPECT_EQ(r.legality().flags(0), "launch_cover_unavailable");
  EXPECT_EQ(r.legality().flags(1), "persisting_l2_reset_unavailable");
}

// Two loops of the reference in one job (beside the candidate's, and prepared or cached) that
// moved apart say how far loops of one kernel move between moments: the interval takes it in.
TEST(KernelBenchSpeedup, TheIntervalWidensByHowFarTheReferencesTwoLoopsMovedApart) {
  using nlohmann::json;
  std::vector<double> ref, other, calls;
  for (int i = 0; i < 40; ++i) {
    ref.push_back(2.0 + 0.001 * (i % 5));
    other.push_back(2.1 + 0.001 * (i % 5));
    calls.push_back(1.0 + 0.001 * (i % 5));
  }
  const json base = {{"trial_ms", ref}, {"method", "cuda_events"}};
  const json prepared = {{"trial_ms", other}, {"method", "cuda_events"}};
  const json cand = {{"trial_ms", calls}, {"method", "cuda_events"}};
  kj::SpeedupFacts f;
  f.candidate = &cand;
  f.baseline = &base;
  v1::Performance alone;
  kj::set_speedup(alone, f);
  EXPECT_EQ(alone.baseline_loop_shift(), 0.0);
  EXPECT_LT(alone.speedup_ci_high() / alone.speedup_ci_low(), 1.01);  // sampling noise only
  f.other_baseline = &prepared;
  v1::Performance two;
  kj::set_speedup(two, f);
  EXPECT_NEAR(two.baseline_loop_shift(), 0.05, 1e-3);
  EXPECT_NEAR(two.speedup(), alone.speedup(), 1e-12);  // the figure is the adjacent loop's
  EXPECT_NEAR(two.speedup_ci_low(), alone.speedup_ci_low() / 1.05, 1e-3);
  EXPECT_NEAR(two.speedup_ci_high(), alone.speedup_ci_high() * 1.05, 1e-3);
  f.compat = true;  // KernelBench's means: the same widening
  v1::Performance compat;
  kj::set_speedup(compat, f);
  EXPECT_NEAR(compat.baseline_loop_shift(), 0.05, 1e-3);
  EXPECT_GT(compat.speedup_ci_high() / compat.speedup_ci_low(), 1.10);
}

TEST(KernelBenchSpeedup, TheIntervalTakesTheDevicesRecentLoopShiftWhenLarger) {
  using nlohmann::json;
  std::vector<double> ref, calls;
  for (int i = 0; i < 40; ++i) {
    ref.push_back(2.0 + 0.001 * (i % 5));
    calls.push_back(1.0 + 0.001 * (i % 5));
  }
  const json base = {{"trial_ms", ref}, {"method", "cuda_events"}}, cand = {{"trial_ms", calls}, {"method", "cuda_events"}};
  kj::SpeedupFacts f;
  f.candidate = &cand;
  f.baseline = &base;
  v1::Performance alone, device;
  kj::set_speedup(alone, f);
  f.device_loop_shift = 0.02;
  kj::set_speedup(device, f);
  EXPECT_EQ(device.device_loop_shift(), 0.02);
  EXPECT_EQ(device.baseline_loop_shift(), 0.0);
  EXPECT_NEAR(device.speedup_ci_low(), alone.speedup_ci_low() / 1.02, 1e-6);
  EXPECT_NEAR(device.speedup_ci_high(), alone.speedup_ci_high() * 1.02, 1e-6);
}

// KernelBench's own second look beyond 10x, in both modes; compat's loops say what the host did.
TEST(KernelBenchSpeedup, BeyondKernelBenchsTenfoldTheSpeedupIsMarkedExcessive) {
  using nlohmann::json;
  const auto loop = [](double ms, int redone) {
    return json{{"trial_ms", std::vector<double>(100, ms)}, {"method", "cuda_events"}, {"trials_redone", redone},
                {"host_wait_ms", 1.5}, {"kernelbench_stats", {{"mean", ms}, {"std", 0.0}, {"min", ms}, {"max", ms}}}};
  };
  const json ref = loop(2.0, 3), just_ten = loop(0.2, 0), beyond = loop(0.19, 7);
  kj::SpeedupFacts f;
  f.baseline = &ref;
  f.compat = true;
  for (const bool compat : {true, false}) {
    f.compat = compat;
    v1::Performance at, past;
    f.candidate = &just_ten;
    kj::set_speedup(at, f);
    EXPECT_NEAR(at.speedup(), 10.0, 1e-9);
    EXPECT_FALSE(at.excessive_speedup());  // KernelBench's test is "greater than"
    f.candidate = &beyond;
    kj::set_speedup(past, f);
    EXPECT_TRUE(past.excessive_speedup());
    EXPECT_EQ(past.candidate().trials_redone(), 7u);
    EXPECT_EQ(past.baseline().trials_redone(), 3u);
    EXPECT_DOUBLE_EQ(past.baseline().host_wait_ms(), 1.5);
  }
  const json odd = {{"trial_ms", {1.0}}, {"trials_redone", -4}, {"host_wait_ms", "x"}};  // the loop's own word: none
  EXPECT_EQ(kj::stats_of(odd).trials_redone(), 0u);
  EXPECT_EQ(kj::stats_of(odd).host_wait_ms(), 0.0);
}

TEST(LoopDrift, NoFigureUntilEnoughJobsThenTheP90OfTheRecentWindow) {
  kj::LoopDrift d;
  for (std::size_t i = 0; i + 1 < kj::LoopDrift::kMinSamples; ++i) d.record(0.5);
  EXPECT_EQ(d.p75(), 0.0);  // too few jobs to say anything about the device
  d.record(0.5);
  EXPECT_EQ(d.p75(), 0.5);
  for (int i = 1; i <= 64; ++i) d.record(i / 1000.0);  // the window keeps the last 64: 0.001..0.064
  EXPECT_NEAR(d.p75(), 0.048, 1e-12);                   // the 48th of 64
  d.record(std::nan(""));
  d.record(-1);
  EXPECT_NEAR(d.p75(), 0.048, 1e-12);  // not a distance: not recorded
  EXPECT_NE(&kj::LoopDrift::of_device(0), &kj::LoopDrift::of_device(1));
  EXPECT_EQ(&kj::LoopDrift::of_device(2), &kj::LoopDrift::of_device(2));
}

TEST(KernelBenchCompare, CompatModeIsTorchAllcloseExactly) {
  const float e[] = {1000.0f, 1.0f}, a[] = {1000.15f, 1.0f};
  auto bytes = [](const float* p) { return std::as_bytes(std::span(p, 2)); };
  kj::Tolerance strict{1e-4, 1e-4};
  EXPECT_TRUE(kj::compare_tensor(v1::F32, bytes(e), bytes(a), strict).passed());  // atol scaled by 1000
  kj::Tolerance allclose{1e-4, 1e-4, /*scale_aware=*/false, /*nan_equal=*/false};
  EXPECT_FALSE(kj::compare_tensor(v1::F32, bytes(e), bytes(a), allclose).passed());  // 0.15 > 1e-4 + 0.1
  const float n = std::numeric_limits<float>::quiet_NaN();
  const float en[] = {n, 1.0f}, an[] = {n, 1.0f};
  EXPECT_TRUE(kj::compare_tensor(v1::F32, bytes(en), bytes(an), strict).passed());
  EXPECT_FALSE(kj::compare_tensor(v1::F32, bytes(en), bytes(an), allclose).passed());
}

TEST(KernelBenchChecks, TheWorkersComparisonBecomesTheResultsFields) {
  const json j = {{"arg", "output"}, {"passed", false}, {"elements", 6}, {"mismatches", 2},
                  {"first_mismatch_index", 4}, {"max_abs_error", 0.5}, {"max_rel_error", 0.25},
                  {"atol", 1e-4}, {"rtol", 1e-4}, {"problem", "output shape [3, 2] differs"}};
  const auto c = kj::comparison_from_json(j);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.elements(), 6u);
  EXPECT_EQ(c.mismatches(), 2u);
  EXPECT_EQ(c.first_mismatch_index(), 4);
  EXPECT_DOUBLE_EQ(c.max_abs_error(), 0.5);
  EXPECT_NE(c.problem().find("shape"), std::string::npos);
  EXPECT_FALSE(kj::comparison_from_json(json::object()).passed());  // nothing said: not passed
}

// The worker's own checks (its input copies, the audited calls) decide as the harness's did.
TEST(KernelBenchChecks, WorkerFlagsAndAuditsAreIntegrityFacts) {
  const json cand = {{"outputs", json::array()}, {"timing", {{"trial_ms", {1.0, 1.0, 1.0}}, {"method", "perf_counter"}}}};
  const json oracle = {{"audits", {1}}};
  std::vector<kj::ClockMark> marks;
  kj::KernelBenchFacts f;
  f.candidate = &cand;
  f.oracle = &oracle;
  f.marks = &marks;
  f.timed = true;
  json worker = {{"flags", {"inputs_mutated:declared"}}, {"audits", json::object()}};
  f.worker = &worker;
  v1::Result r;
  auto d = kj::check_after_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, v1::CHEAT);
  EXPECT_TRUE(r.legality().inputs_mutated());
  worker = {{"flags", {"inputs_mutated_during_timing"}}, {"audits", json::object()}};
  r.Clear();
  d = kj::check_after_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_NE(d->message.find("timed calls"), std::string::npos);
  worker = {{"flags", json::array()}, {"audits", {{"1", {{"passed", false}}}}}};  // audited call wrong
  r.Clear();
  d = kj::check_after_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_NE(d->message.find("timed call 1"), std::string::npos);
}

TEST(KernelBenchChecks, RequestsTheWorkerRefusedAreTampering) {
  v1::Result r;
  EXPECT_FALSE(kj::check_channel(json{{"protocol_errors", json::array()}}, r));
  EXPECT_FALSE(kj::check_channel(json{{"channel_left_open", true}}, r));  // a dead sandbox's channel
  const auto d = kj::check_channel(json{{"protocol_errors", {"results: unknown channel op 'results'"}}}, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, v1::CHEAT);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_TAMPER);
  EXPECT_NE(d->message.find("unknown channel op"), std::string::npos);
}

TEST(KernelBenchChecks, AnOutputReplayedFromAnEarlierSetIsMemoization) {
  const json cand = {{"outputs", json::array()}};
  const json worker = {{"flags", {"output_of_earlier_set:declared-2:declared"}}};
  kj::KernelBenchFacts f;
  f.candidate = &cand;
  f.worker = &worker;
  v1::Result r;
  const auto d = kj::check_before_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_MEMOIZATION);
  EXPECT_NE(d->message.find("'declared-2' is the expected output of set 'declared'"), std::string::npos) << d->message;
}

TEST(KernelBenchChecks, ThreadsLeftRunningDecideBeforeAReplayedOrWrongOutput) {
  // A detached thread that fills the output late: the buffer read meanwhile may hold an earlier
  // set's answer (a reused allocation) or garbage; either way the cause is the deferred work.
  const json worker = {{"flags", {"output_of_earlier_set:spike:large"}}};
  json cand = {{"outputs", json::array()}, {"threads_before", 4}, {"threads_after", 5}};
  kj::KernelBenchFacts f;
  f.candidate = &cand;
  f.worker = &worker;
  v1::Result r;
  auto d = kj::check_before_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_DEFERRED) << d->message;
  EXPECT_EQ(r.legality().threads_left(), 1u);
  cand["threads_after"] = 4;  // no thread left at the end, but one right after a call: deferred
  cand["threads_alive_after_call"] = {"spike"};
  r.Clear();
  d = kj::check_before_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_DEFERRED) << d->message;
  EXPECT_NE(d->message.find("when forward returned"), std::string::npos) << d->message;
  cand["threads_alive_after_call"] = json::array();  // no thread at all: the replay is memoization
  r.Clear();
  d = kj::check_before_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_MEMOIZATION) << d->message;
  cand["outputs_changed_after_return"] = {"spike"};  // the harness saw the late write itself
  r.Clear();
  d = kj::check_before_compare(f, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_DEFERRED) << d->message;
  EXPECT_NE(d->message.find("[\"spike\"] changed after forward had returned"), std::string::npos) << d->message;
}

TEST(KernelBenchBuild, ExtensionCacheFolderPerTenantAndCandidateSource) {
  kj::Config cfg;
  cfg.kernelbench.cache_dir = std::filesystem::path(::testing::TempDir()) / "kb-ext-ns";
  v1::Job a;
  a.set_tenant("team-a");
  a.mutable_kernelbench()->set_model_new_py("class ModelNew: pass\n");
  v1::Job b = a;
  b.set_tenant("team-b");
  v1::Job c = a;
  c.mutable_kernelbench()->set_model_new_py("class ModelNew: pass  # another sample\n");
  const auto dir_a = kj::kernelbench_ext_cache_dir(a, cfg);
  EXPECT_EQ(dir_a, kj::kernelbench_ext_cache_dir(a, cfg));
  EXPECT_EQ(dir_a.parent_path(), cfg.kernelbench.cache_dir / "torch-ext");
  EXPECT_NE(dir_a, kj::kernelbench_ext_cache_dir(b, cfg));  // same source, other tenant
  EXPECT_NE(dir_a, kj::kernelbench_ext_cache_dir(c, cfg));  // same tenant, other source
  EXPECT_TRUE(std::filesystem::is_directory(dir_a));
}

// A cuda build on a node that knows no CUDA architecture (no GPU, no cuda_arch_list) failed in
// torch's extension builder and was the candidate's COMPILE_ERROR (rehearsal of bench/rlstep).
TEST(KernelBenchBuild, NoCudaArchitectureIsTheNodesFaultNotACompileError) {
  kj::Config cfg;
  cfg.kernelbench.cache_dir = std::filesystem::path(::testing::TempDir()) / "kb-no-arch";
  if (!kj::kernelbench_cuda_arch_list(cfg).empty()) GTEST_SKIP() << "a GPU answered nvidia-smi on this host";
  v1::Job job;
  job.set_tenant("t");
  job.mutable_kernelbench()->set_model_new_py("class ModelNew: pass\n");
  kj::KernelBenchBuildInput in;
  in.backend = "cuda";
  v1::Result r;
  const auto out = kj::build_kernelbench(job, cfg, in, r);
  ASSERT_TRUE(out.failure.has_value());
  EXPECT_EQ(out.failure->verdict, v1::INFRA_ERROR);
  EXPECT_NE(out.failure->message.find("cuda_arch_list"), std::string::npos) << out.failure->message;
}

TEST(KernelBenchValidate, TaskFields) {
  kj::LimitsConfig limits;
  v1::Job job;
  job.set_job_id("kb-1");
  job.set_tenant("dev");
  auto* kb = job.mutable_kernelbench();
  kb->set_reference_py("class Model: ...");
  EXPECT_TRUE(kj::validate_job(job, limits));  // no candidate
  kb->set_model_new_py("class ModelNew: ...");
  EXPECT_FALSE(kj::validate_job(job, limits));
  (*kb->mutable_size_overrides())["N-1"] = 4;
  EXPECT_NE(kj::validate_job(job, limits)->message.find("identifier"), std::string::npos);
  kb->mutable_size_overrides()->clear();
  (*kb->mutable_size_overrides())["N"] = 0;
  EXPECT_TRUE(kj::validate_job(job, limits));
  kb->mutable_size_overrides()->clear();
  kb->set_backend(v1::BACKEND_HIP);
  EXPECT_NE(kj::validate_job(job, limits)->message.find("not supported"), std::string::npos);
  kb->set_backend(v1::BACKEND_CPU);
  kb->set_reference_py("");
  EXPECT_TRUE(kj::validate_job(job, limits));
}

}  // namespace

TEST(KernelBenchBaselineCache, KeyedByTaskRulesAndNodeNotBySecrets) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kb-baseline-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  v1::KernelBenchTask task;
  task.set_reference_py("class Model: ...");
  task.set_backend(v1::BACKEND_CPU);
  (*task.mutable_size_overrides())["N"] = 64;
  const json timing = {{"warmup", 3}, {"min_trials", 10}, {"max_trials", 100}, {"perturb_seed", 1},
                       {"audit_calls", {2, 5}}};
  const json entry = {{"baseline", {{"trial_ms", {1.0, 2.0}}}}, {"overhead_per_call_ms", 0.1}, {"wall_gap_ms", 0.0}};
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, task, false, timing).cached());
  kj::KernelBenchBaselineCache(dir, task, false, timing).store("node A", entry);

  // Same task and rules, other secrets: the entry and the node it was measured on.
  json other_secrets = timing;
  other_secrets["perturb_seed"] = 99;
  other_secrets["audit_calls"] = {7};
  const kj::KernelBenchBaselineCache hit(dir, task, false, other_secrets);
  ASSERT_TRUE(hit.cached());
  EXPECT_EQ(*hit.cached(), entry);
  EXPECT_EQ(hit.expected_identity(), "node A");

  // Anything that changes the reference's timing misses.
  json more_trials = timing;
  more_trials["max_trials"] = 200;
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, task, false, more_trials).cached());
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, task, true, timing).cached());  // compat mode
  auto resized = task;
  (*resized.mutable_size_overrides())["N"] = 128;
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, resized, false, timing).cached());
  auto fp16 = task;
  fp16.set_precision(v1::FP16);
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, fp16, false, timing).cached());

  // Another node measured last: its identity is expected now, and A's entry is not offered for it.
  kj::KernelBenchBaselineCache(dir, resized, false, timing).store("node B", entry);
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, task, false, timing).cached());

  // A damaged entry is a miss, not a crash.
  kj::KernelBenchBaselineCache(dir, task, false, timing).store("node B", entry);
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".json") std::ofstream(f.path()) << "{not json";
  EXPECT_FALSE(kj::KernelBenchBaselineCache(dir, task, false, timing).cached());
  fs::remove_all(dir);
}
