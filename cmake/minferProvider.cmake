# minfer_add_provider(<target> <sources>...)
#
# Builds a minfer execution provider out of the minfer source tree, against an
# installed minfer (find_package(minfer) includes this file). <target> must be
# minfer_provider_NAME; the library is libminfer_provider_NAME.so, the file
# name libminfer looks for. Like the in-tree providers it is a MODULE library
# that does not link libminfer (it reaches the host only through the
# minfer_host_api it is given), exports only minfer_provider_entry
# (MINFER_PROVIDER_DEFINE) and fails to link, rather than to dlopen, when a
# symbol is missing.
#
# Install it into the directory libminfer searches,
#   install(TARGETS <target> LIBRARY DESTINATION ${MINFER_PROVIDER_INSTALL_DIR})
# or put its directory on MINFER_PROVIDER_PATH.
function(minfer_add_provider target)
  if(NOT target MATCHES "^minfer_provider_[a-z0-9_-]+$")
    message(FATAL_ERROR "minfer_add_provider: target '${target}' must be named "
                        "minfer_provider_NAME (NAME: lower-case letters, digits, '_' and '-')")
  endif()
  if(NOT ARGN)
    message(FATAL_ERROR "minfer_add_provider: no sources given for '${target}'")
  endif()
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE minfer::headers)
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    POSITION_INDEPENDENT_CODE ON)
endfunction()
