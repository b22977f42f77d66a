# Install layout and the Debian package (CPack).
#
#   bin/layergate, bin/layergate_selftest_gpu
#   share/layergate/rules/targets/*.json   target descriptions (paths::rulesDir)
#   share/layergate/stubs/...              stub CUDA/torch headers (paths::stubDir)
#   share/doc/layergate/                   README, docs/, CI recipes
#
# The binary finds share/layergate relative to itself (/proc/self/exe), so a
# prefix can be moved after installing; the build tree keeps using the source
# tree. `cpack -G DEB` in the build directory writes layergate_<ver>_<arch>.deb
# (and, for a build with debug info, its -dbgsym package).
include(GNUInstallDirs)

if(TARGET layergate)
  install(TARGETS layergate layergate_selftest_gpu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/rules/ DESTINATION ${CMAKE_INSTALL_DATADIR}/layergate/rules)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/tool/cpp/stubs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/layergate/stubs)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ ${CMAKE_SOURCE_DIR}/examples DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME layergate)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "layergate maintainers <layergate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "lint for layered gates: Python gate vs C++/CUDA kernel dispatch (custom all-reduce)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${PROJECT_HOMEPAGE_URL}")
# Run-time needs beyond the linked libraries: the C++ frontend parses with
# clang's builtin headers (-resource-dir /usr/lib/llvm-19/lib/clang/19, from
# libclang-common-19-dev) and the dispatch's own #include <string>, <map>, ...
# (libstdc++-12-dev, which brings libc6-dev).
set(LAYERGATE_DEB_HEADER_DEPENDS "libclang-common-19-dev, libstdc++-12-dev")
find_program(LAYERGATE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(LAYERGATE_DPKG_SHLIBDEPS)
  # The linked libraries' packages, with the versions the binary needs.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "${LAYERGATE_DEB_HEADER_DEPENDS}")
else()
  # Without dpkg-dev: Debian bookworm's packages of the libraries layergate links
  # (ldd build/tool/layergate; dpkg -S): the grammar is compiled in, and so
  # are clang and LLVM where their static archives were found.
  set(LAYERGATE_DEB_LLVM_DEPENDS "libclang-cpp19, libllvm19, ")
  if(LG_STATIC_LLVM)
    set(LAYERGATE_DEB_LLVM_DEPENDS "libzstd1, zlib1g, ")
  endif()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "${LAYERGATE_DEB_LLVM_DEPENDS}libz3-4, libtree-sitter0, libfmt9, libstdc++6, libgcc-s1, libc6, ${LAYERGATE_DEB_HEADER_DEPENDS}")
endif()
# The package's binary is stripped (a third of its size is symbols and
# debug info). Built with debug info (any -g in the build type's flags:
# RelWithDebInfo, the default; Debug; the sanitizer build's line tables),
# CPack splits it into layergate-dbgsym_<ver>_<arch>.ddeb, found by the
# binary's build ID (/usr/lib/debug/.build-id/); without any, it just strips.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _lg_build_type)
if(" ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_lg_build_type}} " MATCHES " -g")
  set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
else()
  set(CPACK_STRIP_FILES ON)
endif()
set(CPACK_GENERATOR DEB)
include(CPack)
