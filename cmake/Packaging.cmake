# Install layout, the CMake package, minfer.pc and the Debian packages.
#
# Components, one Debian package each:
#   runtime          minfer                  libminfer.so.X + the naive CPU provider
#   dev              minfer-dev              headers, libminfer.so link, minfer.pc,
#                                            CMake package, docs, provider template
#   tools            minfer-tools            the `minfer` command
#   provider-NAME    minfer-provider-NAME    <libdir>/minfer/providers/libminfer_provider_NAME.so
# The provider components come from minfer_add_provider (providers/CMakeLists.txt),
# so a provider that is built gets its package without an edit here. Included
# from the top-level CMakeLists.txt after every target exists.

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

# The CLI finds libminfer.so relative to itself, so an install that is
# staged, unpacked elsewhere or moved as a whole still runs.
file(RELATIVE_PATH _minfer_bin_to_lib
  "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
set_target_properties(minfer_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${_minfer_bin_to_lib}")
install(TARGETS minfer_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/minfer
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h")

# ---- CMake package: find_package(minfer) ----------------------------------
install(EXPORT minferTargets NAMESPACE minfer::
  DESTINATION ${MINFER_CMAKE_INSTALL_DIR} COMPONENT dev)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/minferConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/minferConfig.cmake
  INSTALL_DESTINATION ${MINFER_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR MINFER_PROVIDER_INSTALL_DIR)
# 0.x: the SONAME is libminfer.so.0, and so is the compatibility promise.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/minferConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/minferConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/minferConfigVersion.cmake
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

# ---- Docs and the provider template ----------------------------------------
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.md")
# The files by name: a build directory someone made inside the template must
# not end up in the package.
install(FILES
  ${PROJECT_SOURCE_DIR}/providers/template/CMakeLists.txt
  ${PROJECT_SOURCE_DIR}/providers/template/example.c
  DESTINATION ${CMAKE_INSTALL_DATADIR}/minfer/provider-template COMPONENT dev)

# ---- Debian packages (cpack -G DEB) ----------------------------------------
set(MINFER_PACKAGE_MAINTAINER "minfer developers <minfer@localhost>" CACHE STRING
    "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME minfer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MINFER_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
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
# "minfer (>= X.Y.Z)" from their own dpkg-shlibdeps. Written here rather than
# by CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which is global and would warn
# about every provider module (plugins have no SONAME, by design).
# (CPack adds the ldconfig postinst and postrm itself.)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/debian-runtime/shlibs
  "libminfer ${PROJECT_VERSION_MAJOR} minfer (>= ${PROJECT_VERSION})\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/debian-runtime/shlibs)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME minfer)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "minfer runtime library and naive CPU provider\nlibminfer.so and the reference CPU execution provider; other providers\ncome as minfer-provider-NAME packages and are found at run time.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME minfer-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "minfer development files\nHeaders (including the provider ABI), minfer.pc, the CMake package\n(minfer::minfer, minfer::headers, minfer_add_provider), docs and a\nprovider template.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME minfer-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "minfer command-line tool\nThe minfer command: run, test and inspect ONNX models, list providers.")

# Only these components are packaged: an install() rule with any other
# COMPONENT (or none) needs a line here before it ships.
set(CPACK_COMPONENTS_ALL runtime dev tools)
get_property(_minfer_providers GLOBAL PROPERTY MINFER_PROVIDER_NAMES)
foreach(_name IN LISTS _minfer_providers)
  if(_name STREQUAL "cpu")
    continue()
  endif()
  string(TOUPPER "provider-${_name}" _comp)
  # Debian package names allow no '_'.
  string(REPLACE "_" "-" _pkg "minfer-provider-${_name}")
  list(APPEND CPACK_COMPONENTS_ALL provider-${_name})
  set(CPACK_DEBIAN_${_comp}_PACKAGE_NAME ${_pkg})
  set(CPACK_COMPONENT_${_comp}_DEPENDS runtime)
  set(CPACK_COMPONENT_${_comp}_DESCRIPTION
    "minfer ${_name} execution provider\nThe ${_name} provider library for minfer, found by libminfer at run time\nin <libdir>/${MINFER_INSTALL_PROVIDER_SUBDIR}; sessions use it when their provider\nlist names it.")
endforeach()

# python3-minfer: the Python package (python/CMakeLists.txt), when it was
# built. Its extension is for one CPython version and numpy's ABI.
if(TARGET minfer_python)
  list(APPEND CPACK_COMPONENTS_ALL python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-minfer)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
  math(EXPR _minfer_py_next "${MINFER_PYTHON_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "python3 (>= ${MINFER_PYTHON_VERSION_MAJOR}.${MINFER_PYTHON_VERSION_MINOR}), python3 (<< ${MINFER_PYTHON_VERSION_MAJOR}.${_minfer_py_next}), python3-numpy")
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION
    "minfer for Python\nimport minfer: ONNX Runtime's Python API (InferenceSession, SessionOptions,\n...) over libminfer, with numpy arrays in and out, and python3 -m minfer.")
endif()

include(CPack)
