# Install layout, the CMake package (installed and build tree), minfer.pc,
# man pages, bash completion and the Debian packages.
#
# Components, one Debian package each, named by Debian's conventions (the
# library package after its SONAME, libminfer.so.0 -> libminfer0):
#   runtime          libminfer0              libminfer.so.0 + the naive CPU provider
#   dev              libminfer-dev           headers, libminfer.so link, minfer.pc,
#                                            CMake package, docs, provider template
#   tools            minfer-tools            the `minfer` command, its man pages and
#                                            bash completion
#   provider-NAME    minfer-provider-NAME    <libdir>/minfer/providers/libminfer_provider_NAME.so
#   plugin-NAME      minfer-plugin-NAME      <libdir>/minfer/plugins/libminfer_plugin_NAME.so
#   python           python3-minfer          the Python package (python/)
# The provider components come from minfer_add_provider (providers/CMakeLists.txt),
# so a provider that is built gets its package without an edit here. Included
# from the top-level CMakeLists.txt after every target exists.
#
# Installed binaries carry no RPATH (Debian policy; lintian's
# custom-library-search-path): libminfer.so.0 is found in the multiarch
# libdir by ld.so, the providers by libminfer relative to itself
# (core/place/discovery.c). For an install outside the linker's path, set
# LD_LIBRARY_PATH or configure with -DCMAKE_INSTALL_RPATH='$ORIGIN/../lib/...'.

include(CMakePackageConfigHelpers)

set(MINFER_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/minfer")
set(MINFER_PROVIDER_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/${MINFER_INSTALL_PROVIDER_SUBDIR}")

# ---- Targets a user of the installed package sees --------------------------
# minfer::minfer links the library; minfer::headers is only the include
# directory, for provider libraries, which must not link libminfer.
add_library(minfer_headers INTERFACE)
target_include_directories(minfer_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(minfer_headers PROPERTIES EXPORT_NAME headers)
add_library(minfer::headers ALIAS minfer_headers)
add_library(minfer::minfer ALIAS minfer)
install(TARGETS minfer_headers EXPORT minferTargets)

install(TARGETS minfer_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/minfer
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h")

# ---- CMake package: find_package(minfer) ----------------------------------
# Two configs from one template: the installed one (paths relative to where
# minferConfig.cmake lies, so a staged or moved install works) and one for
# the build tree, found with -Dminfer_DIR=<build> or
# CMAKE_PREFIX_PATH=<build>: its targets are the build tree's libminfer.so
# and the source tree's headers, its MINFER_PROVIDER_DIR the build tree's
# provider directory (where the core looks when run from the build tree).
install(EXPORT minferTargets NAMESPACE minfer::
  DESTINATION ${MINFER_CMAKE_INSTALL_DIR} COMPONENT dev)
export(EXPORT minferTargets NAMESPACE minfer::
  FILE ${PROJECT_BINARY_DIR}/minferTargets.cmake)

set(MINFER_CONFIG_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR})
set(MINFER_CONFIG_PROVIDER_DIR ${MINFER_PROVIDER_INSTALL_DIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/minferConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake-install/minferConfig.cmake
  INSTALL_DESTINATION ${MINFER_CMAKE_INSTALL_DIR}
  PATH_VARS MINFER_CONFIG_INCLUDE_DIR MINFER_CONFIG_PROVIDER_DIR)
set(MINFER_CONFIG_INCLUDE_DIR ${PROJECT_SOURCE_DIR}/include)
set(MINFER_CONFIG_PROVIDER_DIR ${MINFER_BUILD_PROVIDER_DIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/minferConfig.cmake.in
  ${PROJECT_BINARY_DIR}/minferConfig.cmake
  INSTALL_DESTINATION ${PROJECT_BINARY_DIR}
  INSTALL_PREFIX ${PROJECT_BINARY_DIR}
  PATH_VARS MINFER_CONFIG_INCLUDE_DIR MINFER_CONFIG_PROVIDER_DIR)
configure_file(${CMAKE_CURRENT_LIST_DIR}/minferProvider.cmake
  ${PROJECT_BINARY_DIR}/minferProvider.cmake COPYONLY)
# 0.x: the SONAME is libminfer.so.0, and so is the compatibility promise.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/minferConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake-install/minferConfig.cmake
  ${PROJECT_BINARY_DIR}/minferConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/minferProvider.cmake
  DESTINATION ${MINFER_CMAKE_INSTALL_DIR} COMPONENT dev)

# ---- pkg-config ------------------------------------------------------------
# prefix is computed from the .pc file's own place (${pcfiledir}), so the file
# stays right in a staged, unpacked or moved install with no --define-prefix.
file(RELATIVE_PATH _minfer_pc_to_prefix
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" _minfer_pc_to_prefix "${_minfer_pc_to_prefix}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/minfer.pc.in ${CMAKE_CURRENT_BINARY_DIR}/minfer.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/minfer.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# ---- Debian package names ---------------------------------------------------
# The library package is named after the SONAME (Debian policy 8.1), so a
# libminfer.so.1 would come as libminfer1, installable beside libminfer0.
set(MINFER_DEB_RUNTIME "libminfer${PROJECT_VERSION_MAJOR}")
set(MINFER_DEB_DEV "libminfer-dev")
set(MINFER_DEB_TOOLS "minfer-tools")

# ---- Docs and the provider template ----------------------------------------
# In the dev package's own doc directory (Debian: /usr/share/doc/<package>),
# laid out as in the source tree so that README.md's links (docs/...) hold.
set(MINFER_DEV_DOCDIR "${CMAKE_INSTALL_DATADIR}/doc/${MINFER_DEB_DEV}")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${MINFER_DEV_DOCDIR} COMPONENT dev)
# The pictures the pages link to (img/) go with them; docs/man/ holds the
# man pages' sources, installed as pages by minfer-tools.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${MINFER_DEV_DOCDIR}/docs COMPONENT dev
  FILES_MATCHING PATTERN "*.md" PATTERN "*.svg" PATTERN "*.png"
  PATTERN "man" EXCLUDE)
# The files by name: a build directory someone made inside the template must
# not end up in the package.
install(FILES
  ${PROJECT_SOURCE_DIR}/providers/template/CMakeLists.txt
  ${PROJECT_SOURCE_DIR}/providers/template/example.c
  DESTINATION ${CMAKE_INSTALL_DATADIR}/minfer/provider-template COMPONENT dev)

# ---- Man pages and bash completion (minfer-tools) ---------------------------
# The pages are made at build time by help2man from the commands' own --help,
# so they cannot drift from the CLI: minfer(1) with docs/man/minfer.h2m's
# sections (environment, files), and minfer-COMMAND(1) for each command, as
# git and docker name theirs. Installed gzip -9n compressed (Debian policy
# 12.1). tests/test_packaging.sh checks that every command `minfer --help`
# lists has a page and is completed.
set(MINFER_CLI_COMMANDS run test info bench providers optimize)
set(MINFER_MAN_NAME_run "run an ONNX model on given or random inputs")
set(MINFER_MAN_NAME_test "run ONNX test cases and compare the outputs with their references")
set(MINFER_MAN_NAME_info "show a model's inputs, outputs, ops, provider placement and memory plan")
set(MINFER_MAN_NAME_bench "time session creation and runs of an ONNX model")
set(MINFER_MAN_NAME_providers "list the execution providers found and whether each loads")
list(APPEND MINFER_CLI_COMMANDS plugins)
set(MINFER_MAN_NAME_plugins "list the custom-operator plugins found, their ops, and whether each loads")
set(MINFER_MAN_NAME_optimize "write the optimized graph of an ONNX model as an ONNX file")
list(APPEND MINFER_CLI_COMMANDS compile)
set(MINFER_MAN_NAME_compile "write an ONNX model as a compiled minfer model file (.mfc)")

find_program(MINFER_HELP2MAN help2man)
find_program(MINFER_GZIP gzip)
if(MINFER_HELP2MAN AND MINFER_GZIP)
  set(_man_dir ${PROJECT_BINARY_DIR}/man)
  file(MAKE_DIRECTORY ${_man_dir})
  set(_see_also ".BR minfer (1)")
  foreach(_cmd IN LISTS MINFER_CLI_COMMANDS)
    string(APPEND _see_also ",\n.BR minfer-${_cmd} (1)")
  endforeach()
  file(WRITE ${_man_dir}/see-also.h2m "[SEE ALSO]\n${_see_also}\n.PP\nThe full documentation is in /usr/share/doc/${MINFER_DEB_DEV}/ (package ${MINFER_DEB_DEV}).\n")
  set(_pages)
  foreach(_cmd IN ITEMS minfer LISTS MINFER_CLI_COMMANDS)
    if(_cmd STREQUAL "minfer")
      set(_page minfer)
      set(_help --help)
      set(_name "a small ONNX inference runtime")
      set(_extra --include=${PROJECT_SOURCE_DIR}/docs/man/minfer.h2m)
    else()
      set(_page minfer-${_cmd})
      set(_help "${_cmd} --help")
      set(_name "${MINFER_MAN_NAME_${_cmd}}")
      set(_extra)
    endif()
    add_custom_command(
      OUTPUT ${_man_dir}/${_page}.1.gz
      COMMAND ${MINFER_HELP2MAN} --no-info --section=1 --manual=minfer
              --source=minfer\ ${PROJECT_VERSION} --name=${_name}
              --help-option=${_help} --version-string=${_page}\ ${PROJECT_VERSION}
              --include=${_man_dir}/see-also.h2m ${_extra}
              --output=${_man_dir}/${_page}.1 $<TARGET_FILE:minfer_cli>
      COMMAND ${MINFER_GZIP} -9nf ${_man_dir}/${_page}.1
      DEPENDS minfer_cli ${_man_dir}/see-also.h2m ${PROJECT_SOURCE_DIR}/docs/man/minfer.h2m
      COMMENT "Man page ${_page}(1) from minfer ${_help}"
      VERBATIM)
    list(APPEND _pages ${_man_dir}/${_page}.1.gz)
  endforeach()
  add_custom_target(minfer_man ALL DEPENDS ${_pages})
  install(FILES ${_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
else()
  message(STATUS "help2man not found: no man pages for minfer-tools (tools/install-deps.sh installs it)")
endif()

install(FILES ${PROJECT_SOURCE_DIR}/tools/completion/minfer.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME minfer COMPONENT tools)

# ---- Debian packages (cpack -G DEB) ----------------------------------------
# The earlier default, still in build trees configured before, is replaced.
if(MINFER_PACKAGE_MAINTAINER STREQUAL "minfer developers <minfer@localhost>")
  unset(MINFER_PACKAGE_MAINTAINER CACHE)
endif()
set(MINFER_PACKAGE_MAINTAINER "minfer developers <minfer-dev@lists.example.org>" CACHE STRING
    "Maintainer field of the Debian packages (and their changelog entries)")
# VERSION-RELEASE: a Debian revision makes these non-native packages, whose
# Debian changelog is changelog.Debian.gz.
set(MINFER_PACKAGE_RELEASE 1 CACHE STRING "Debian revision of the packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME minfer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${MINFER_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SOURCE minfer)
set(CPACK_PACKAGE_CONTACT "${MINFER_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${MINFER_PACKAGE_MAINTAINER}")
# Always /usr, whatever the configure's prefix; CMAKE_INSTALL_LIBDIR is the
# multiarch directory on Debian whatever the prefix (top-level CMakeLists.txt).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Stripped, as Debian ships binaries; debug builds use the build tree.
set(CPACK_STRIP_FILES ON)
# Depends: computed by dpkg-shlibdeps from the ELF files of each package (so
# the oneDNN provider depends on the oneDNN runtime, the OpenCL one on the ICD
# loader), plus the packages of the components it needs (below).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# The CLI needs libminfer.so.0, which is in another package of this build:
# dpkg-shlibdeps finds it in the build tree and leaves the dependency to the
# component dependency tools -> runtime.
get_target_property(_minfer_lib_dir minfer BINARY_DIR)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${_minfer_lib_dir}")
# DEBIAN/shlibs for libminfer.so.0, so programs packaged elsewhere get
# "libminfer0 (>= X.Y.Z)" from their own dpkg-shlibdeps. Written here rather
# than by CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which is global and would warn
# about every provider module (plugins have no SONAME, by design).
# The ldconfig trigger: Debian's libc activates it for every package that
# ships a library in a linker directory (lintian:
# package-must-activate-ldconfig-trigger), written here as dh_makeshlibs does.
file(WRITE ${PROJECT_BINARY_DIR}/debian-runtime/shlibs
  "libminfer ${PROJECT_VERSION_MAJOR} ${MINFER_DEB_RUNTIME} (>= ${PROJECT_VERSION})\n")
file(WRITE ${PROJECT_BINARY_DIR}/debian-runtime/triggers "activate-noawait ldconfig\n")
# DEBIAN/symbols (cmake/libminfer0.symbols): every symbol libminfer.so.0
# exports, with the version that brought it, so that dpkg-shlibdeps gives
# a program the lowest libminfer0 with what it uses. A new public function
# gets a line with the version it first ships in; tests/test_packaging.sh
# fails naming any symbol the library and the file disagree on.
configure_file(${CMAKE_CURRENT_LIST_DIR}/libminfer0.symbols
  ${PROJECT_BINARY_DIR}/debian-runtime/symbols COPYONLY)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
  ${PROJECT_BINARY_DIR}/debian-runtime/shlibs ${PROJECT_BINARY_DIR}/debian-runtime/symbols
  ${PROJECT_BINARY_DIR}/debian-runtime/triggers)

# Per package: its Debian control fields and /usr/share/doc/<package>/
# copyright (DEP-5, cmake/copyright.in) and changelog.Debian.gz (Debian
# policy 12.5 and 12.7). Multi-Arch (CPack has no field for it) is written
# by cmake/DebFixup.cmake after cpack, from CPACK_MINFER_MULTIARCH.
string(TIMESTAMP MINFER_PACKAGE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(CPACK_MINFER_MULTIARCH)
macro(minfer_deb_package component package section multiarch)
  string(TOUPPER "${component}" _c)
  set(CPACK_DEBIAN_${_c}_PACKAGE_NAME ${package})
  set(CPACK_DEBIAN_${_c}_PACKAGE_SECTION ${section})
  list(APPEND CPACK_COMPONENTS_ALL ${component})
  if(NOT "${multiarch}" STREQUAL "")
    list(APPEND CPACK_MINFER_MULTIARCH "${package}=${multiarch}")
  endif()
  set(_d ${PROJECT_BINARY_DIR}/debian-doc/${package})
  configure_file(${CMAKE_CURRENT_LIST_DIR}/copyright.in ${_d}/copyright @ONLY)
  file(WRITE ${_d}/changelog.Debian
    "minfer (${PROJECT_VERSION}-${MINFER_PACKAGE_RELEASE}) unstable; urgency=medium\n\n"
    "  * Built from the minfer source tree by cpack (cmake/Packaging.cmake).\n\n"
    " -- ${MINFER_PACKAGE_MAINTAINER}  ${MINFER_PACKAGE_DATE}\n")
  execute_process(COMMAND ${MINFER_GZIP} -9nc ${_d}/changelog.Debian
    OUTPUT_FILE ${_d}/changelog.Debian.gz RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "gzip -9n of ${_d}/changelog.Debian failed: ${_rc}")
  endif()
  install(FILES ${_d}/copyright ${_d}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component})
endmacro()
if(NOT MINFER_GZIP)
  message(FATAL_ERROR "gzip not found (the Debian packages' changelogs need it)")
endif()

# Only these components are packaged: an install() rule with any other
# COMPONENT (or none) needs a minfer_deb_package line before it ships.
set(CPACK_COMPONENTS_ALL)
# Libraries and providers: one copy per architecture can be installed side
# by side (Multi-Arch: same); their shared files (docs, headers, the
# template) are identical on every architecture.
minfer_deb_package(runtime ${MINFER_DEB_RUNTIME} libs same)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "minfer runtime library and naive CPU provider\nlibminfer.so.0, a small ONNX inference runtime, and its reference CPU\nexecution provider; other providers come as minfer-provider-NAME packages\nand are found at run time.")

minfer_deb_package(dev ${MINFER_DEB_DEV} libdevel same)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "minfer runtime library - development files\nHeaders (including the provider ABI), minfer.pc, the CMake package\n(minfer::minfer, minfer::headers, minfer_add_provider), docs and a\nprovider template.")

# The tool's interface (its command line and output) is the same whatever
# its architecture: it satisfies dependencies of packages of any (foreign).
minfer_deb_package(tools ${MINFER_DEB_TOOLS} utils foreign)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "minfer command-line tool\nThe minfer command: run, test, benchmark, optimize and inspect ONNX\nmodels, list providers. With man pages and bash completion.")

get_property(_minfer_providers GLOBAL PROPERTY MINFER_PROVIDER_NAMES)
foreach(_name IN LISTS _minfer_providers)
  if(_name STREQUAL "cpu")
    continue()
  endif()
  string(TOUPPER "provider-${_name}" _comp)
  # Debian package names allow no '_'.
  string(REPLACE "_" "-" _pkg "minfer-provider-${_name}")
  minfer_deb_package(provider-${_name} ${_pkg} libs same)
  set(CPACK_COMPONENT_${_comp}_DEPENDS runtime)
  set(CPACK_COMPONENT_${_comp}_DESCRIPTION
    "minfer ${_name} execution provider\nThe ${_name} provider library for minfer, found by libminfer at run time\nin <libdir>/${MINFER_INSTALL_PROVIDER_SUBDIR}; sessions use it when their provider\nlist names it.")
endforeach()

# libminfer0 alone runs everything on the naive reference provider: it
# recommends the fast CPU path (apt installs Recommends by default), and the
# CLI says so when the reference provider runs a whole model
# (tools/cli_util.c, cli_note_reference).
if("onednn" IN_LIST _minfer_providers)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "minfer-provider-onednn")
endif()

# minfer-plugin-NAME: each custom-operator plugin (minfer_add_plugin,
# plugins/CMakeLists.txt), found by libminfer at run time in
# <libdir>/minfer/plugins with no environment set (docs/plugins.md).
get_property(_minfer_plugins GLOBAL PROPERTY MINFER_PLUGIN_NAMES)
foreach(_name IN LISTS _minfer_plugins)
  string(TOUPPER "plugin-${_name}" _comp)
  string(REPLACE "_" "-" _pkg "minfer-plugin-${_name}")
  minfer_deb_package(plugin-${_name} ${_pkg} libs same)
  set(CPACK_COMPONENT_${_comp}_DEPENDS runtime)
  set(CPACK_COMPONENT_${_comp}_DESCRIPTION
    "minfer ${_name} custom-operator plugin\nThe ${_name} operator plugin library for minfer, found by libminfer at run\ntime in <libdir>/${MINFER_INSTALL_PLUGIN_SUBDIR}; sessions load it for models with ops in its\ndomains, or when named with --plugin or MINFER_PLUGINS.")
endforeach()

# python3-minfer: the Python package (python/CMakeLists.txt), when it was
# built. Its extension is for one CPython version and numpy's ABI; no
# Multi-Arch, as its modules live in the one /usr/lib/python3/dist-packages.
if(TARGET minfer_python)
  minfer_deb_package(python python3-minfer python "")
  set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
  math(EXPR _minfer_py_next "${MINFER_PYTHON_VERSION_MINOR} + 1")
  # The extension uses numpy's C API: it needs a numpy of the same ABI and at
  # least the API it was built with, which Debian's numpy states in
  # /usr/share/numpy3/versions (as dh_numpy3 reads it; lintian's
  # missing-dependency-on-numpy-abi).
  set(_minfer_numpy_dep "python3-numpy")
  if(EXISTS /usr/share/numpy3/versions)
    file(STRINGS /usr/share/numpy3/versions _abi REGEX "^abi [0-9]+$")
    file(STRINGS /usr/share/numpy3/versions _api_min REGEX "^api-min-version ")
    string(REGEX REPLACE "^abi " "" _abi "${_abi}")
    string(REGEX REPLACE "^api-min-version " "" _api_min "${_api_min}")
    if(_abi AND _api_min)
      set(_minfer_numpy_dep "python3-numpy (>= ${_api_min}), python3-numpy-abi${_abi}")
    endif()
  endif()
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "python3 (>= ${MINFER_PYTHON_VERSION_MAJOR}.${MINFER_PYTHON_VERSION_MINOR}), python3 (<< ${MINFER_PYTHON_VERSION_MAJOR}.${_minfer_py_next}), ${_minfer_numpy_dep}")
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION
    "minfer for Python\nimport minfer: ONNX Runtime's Python API (InferenceSession, SessionOptions\nand the rest) over libminfer, with numpy arrays in and out, and\npython3 -m minfer.")
endif()

# After the .debs are made: Multi-Arch, and Depends without repeats
# (dpkg-shlibdeps' output for several ELF files lists a library once per file).
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/DebFixup.cmake)

include(CPack)
