// Device passthrough profiles: TOML data (sandbox/profiles/*.toml, compiled in) -> devices,
// binds and environment for one GPU.
#include <glob.h>
#include <sys/stat.h>

#include <toml++/toml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "kjsandbox/policy.h"
#include "seccomp_filter.h"

namespace kjsandbox {
namespace {

bool exists(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0;
}

std::string substitute(std::string s, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) {
    const std::string key = "{" + k + "}";
    for (std::size_t pos; (pos = s.find(key)) != std::string::npos;) s.replace(pos, key.size(), v);
  }
  return s;
}

std::vector<std::string> strings(const toml::table& t, const char* key) {
  std::vector<std::string> out;
  if (const auto* arr = t[key].as_array())
    for (const auto& v : *arr)
      if (auto s = v.value<std::string>()) out.push_back(*s);
  return out;
}

std::string read_profile_text(const std::string& name) {
  if (const char* dir = std::getenv("KJSANDBOX_PROFILE_DIR")) {
    std::ifstream in(std::string(dir) + "/" + name + ".toml");
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  }
  for (const auto& [n, text] : embedded_device_profiles())
    if (n == name) return text;
  throw std::runtime_error("unknown device profile '" + name + "'");
}

// NVIDIA: /proc/driver/nvidia/gpus/<bus>/information has "Device Minor: N" and "GPU UUID: ...".
struct NvidiaGpu {
  std::string dir, uuid;
  int minor = -1;
};

std::vector<NvidiaGpu> nvidia_gpus() {
  std::vector<NvidiaGpu> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    NvidiaGpu g;
    g.dir = e.path().string();
    std::ifstream in(g.dir + "/information");
    for (std::string line; std::getline(in, line);) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string k = line.substr(0, colon), v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      if (k == "Device Minor") g.minor = std::atoi(v.c_str());
      if (k == "GPU UUID") g.uuid = v;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace

std::vector<std::string> device_profile_names() {
  std::vector<std::string> out;
  for (const auto& [n, text] : embedded_device_profiles()) out.push_back(n);
  return out;
}

DeviceProfile load_device_profile(const std::string& name, int gpu_index) {
  const std::string text = read_profile_text(name);
  toml::table t;
  try {
    t = toml::parse(text, name + ".toml");
  } catch (const toml::parse_error& e) {
    throw std::runtime_error("device profile " + name + ": " + std::string(e.description()));
  }
  DeviceProfile p;
  p.name = t["name"].value_or(name);
  p.untested = t["untested"].value_or(false);
  if (p.untested) p.notes.push_back("profile '" + p.name + "' is untested on real hardware");

  std::map<std::string, std::string> vars = {{"gpu", std::to_string(gpu_index)},
                                             {"render", std::to_string(128 + gpu_index)},
                                             {"gpu_uuid", std::to_string(gpu_index)}};
  std::vector<std::string> hide;
  if (t["hide_other_gpus"].value_or(false)) {
    for (const auto& g : nvidia_gpus()) {
      if (g.minor == gpu_index) {
        if (!g.uuid.empty()) vars["gpu_uuid"] = g.uuid;
      } else {
        hide.push_back(g.dir);
      }
    }
  }
  for (const auto& d : strings(t, "devices")) {
    std::string path = substitute(d, vars);
    if (exists(path)) p.devices.push_back(path);
    else p.notes.push_back("no " + path + " on this host");
  }
  // Whole directories, by their real path (a symlink such as /usr/local/cuda -> cuda-13.0 would
  // be resolved against the wrong root while the sandbox's root is built); those under /usr are
  // visible through the default /usr bind already.
  for (const auto& b : strings(t, "binds")) {
    std::string path = substitute(b, vars);
    if (!exists(path)) continue;
    std::error_code ec;
    std::string real = std::filesystem::canonical(path, ec).string();
    if (ec) continue;
    if (real.rfind("/usr/", 0) == 0) {
      p.notes.push_back(path + " is under /usr (bound already)");
      continue;
    }
    p.binds.push_back({real, "", false});
  }
  // Libraries: every match of the globs in the listed directories, except under /usr (the
  // default system binds carry /usr already).
  for (const auto& dir : strings(t, "library_dirs")) {
    for (const auto& g : strings(t, "library_globs")) {
      glob_t gl{};
      if (::glob((dir + "/" + g).c_str(), 0, nullptr, &gl) == 0)
        for (std::size_t i = 0; i < gl.gl_pathc; ++i) {
          std::string path = gl.gl_pathv[i];
          if (path.rfind("/usr/", 0) == 0) continue;
          p.binds.push_back({path, "", false});
        }
      ::globfree(&gl);
    }
  }
  for (const auto& u : strings(t, "proc_unmask")) p.proc_unmask.push_back(u);
  p.proc_hide = hide;
  if (const auto* env = t["env"].as_table())
    for (const auto& [k, v] : *env)
      if (auto s = v.value<std::string>()) p.env[std::string(k.str())] = substitute(*s, vars);
  return p;
}

void apply_device_profile(const DeviceProfile& profile, Policy& policy) {
  for (const auto& d : profile.devices) policy.devices.push_back(d);
  for (const auto& b : profile.binds) {
    bool dup = false;
    for (const auto& have : policy.binds) dup |= have.source == b.source && have.target == b.target;
    if (!dup) policy.binds.push_back(b);
  }
  for (const auto& [k, v] : profile.env) policy.env[k] = v;
  for (const auto& u : profile.proc_unmask) policy.proc_unmask.push_back(u);
  for (const auto& h : profile.proc_hide) policy.proc_hide.push_back(h);
}

}  // namespace kjsandbox
