// Whose a candidate's device out-of-memory is: the node's on a busy first try, the candidate's on
// its retry (the device to itself) or when it asked for more than the device has.
#include "pipeline/run/device_shortage.h"

#include <gtest/gtest.h>

namespace kj {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

TEST(DeviceShortage, WithinWhatItWasAdmittedWithIsOurs) {
  EXPECT_TRUE(device_shortage_is_ours({3 * kGiB, 4 * kGiB, 80 * kGiB, true}));
}

TEST(DeviceShortage, BeyondItsAdmissionButWithinTheDeviceOnAFirstTryIsOurs) {
  // run 18: a wide MLP's 4 GiB weight, admitted without its weights, on a device other jobs filled
  const auto ours = device_shortage_is_ours({6 * kGiB + kGiB / 2, 2 * kGiB, 80 * kGiB, true});
  ASSERT_TRUE(ours);
  EXPECT_NE(ours->find("judged again with the device to itself"), std::string::npos);
}

TEST(DeviceShortage, OnTheRetryWithTheDeviceAloneItIsTheCandidates) {
  EXPECT_FALSE(device_shortage_is_ours({6 * kGiB, 0, 80 * kGiB, false}));
}

TEST(DeviceShortage, MoreThanTheWholeDeviceIsTheCandidatesAtOnce) {
  EXPECT_FALSE(device_shortage_is_ours({200 * kGiB, 2 * kGiB, 80 * kGiB, true}));
}

TEST(DeviceShortage, AnUnknownDeviceSizeBlamesOnlyBeyondTheAdmission) {
  EXPECT_FALSE(device_shortage_is_ours({6 * kGiB, 2 * kGiB, 0, true}));
  EXPECT_TRUE(device_shortage_is_ours({kGiB, 2 * kGiB, 0, true}));
}

}  // namespace
}  // namespace kj
