#include "pipeline/native/build_share.h"

#include "pipeline/build/claim.h"
#include "common/sha256.h"
#include "pipeline/build/toolchain_identity.h"

namespace kj {
namespace v1 = kjudge::v1;

std::string native_shared_key(const std::string& local_key, const std::string& party, const Config& cfg) {
  return Sha256().field("kjudge-native-share-v1").field(local_key).field(party).field(toolchain_identity(cfg)).hex();
}

SharedBuild native_shared_success(const std::string& key, std::string artifact_bytes, const std::string& log) {
  SharedBuild b;
  b.key = key;
  b.memo = {{"kind", "native"}, {"log", log}};
  b.files.push_back({"artifact", std::move(artifact_bytes)});
  return b;
}

std::optional<SharedBuild> native_shared_failure(const std::string& key, const Decision& d, const std::string& log) {
  if (!shareable_build_failure(d)) return std::nullopt;
  SharedBuild b;
  b.key = key;
  b.memo = {{"kind", "native"}};
  b.failed = true;
  b.verdict = d.verdict;
  b.message = d.message;
  b.detail = log;
  return b;
}

std::optional<FetchedNativeBuild> fetched_native_build(const SharedBuild& b) {
  if (!b.memo.is_object() || b.memo.value("kind", "") != "native") return std::nullopt;
  FetchedNativeBuild out;
  if (b.failed) {
    out.failure = replayed_build_failure(b.verdict, b.message);
    out.log = b.detail;
    return out;
  }
  if (b.files.size() != 1 || b.files[0].path != "artifact" || b.files[0].bytes.empty()) return std::nullopt;
  out.artifact = b.files[0].bytes;
  out.log = b.memo.value("log", "");
  return out;
}

}  // namespace kj
