// The static zygote executable's bytes, embedded at build time (sandbox/CMakeLists.txt), or
// nothing: then the zygote is the calling program re-executed.
#include <cstddef>
#include <utility>

namespace kjsandbox {

#ifdef KJSBX_ZYGOTE_PATH
__asm__(".pushsection .rodata.kjsbx_zygote,\"a\",@progbits\n"
        ".balign 64\n"
        ".globl kjsbx_zygote_begin\n"
        ".hidden kjsbx_zygote_begin\n"
        "kjsbx_zygote_begin:\n"
        ".incbin \"" KJSBX_ZYGOTE_PATH "\"\n"
        ".globl kjsbx_zygote_end\n"
        ".hidden kjsbx_zygote_end\n"
        "kjsbx_zygote_end:\n"
        ".popsection\n");
extern "C" const char kjsbx_zygote_begin[];
extern "C" const char kjsbx_zygote_end[];
std::pair<const char*, std::size_t> zygote_image() {
  return {kjsbx_zygote_begin, static_cast<std::size_t>(kjsbx_zygote_end - kjsbx_zygote_begin)};
}
#else
std::pair<const char*, std::size_t> zygote_image() { return {nullptr, 0}; }
#endif

}  // namespace kjsandbox
