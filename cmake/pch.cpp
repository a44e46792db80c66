// The translation unit that makes the shared precompiled headers (KJUDGE_PCH in CMakeLists.txt).
