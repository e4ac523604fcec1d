# Run by cpack after the Debian packages are made (CPACK_POST_BUILD_SCRIPTS,
# cmake/Packaging.cmake), with the CPack variables in scope. For each .deb of
# CPACK_PACKAGE_FILES it rewrites DEBIAN/control, then rebuilds the package:
#  - Multi-Arch: from CPACK_MINFER_MULTIARCH ("package=same;..."), a field
#    CPack 3.25 cannot write;
#  - Depends without redundant entries: dpkg-shlibdeps, run by CPack, names
#    the OpenCL ICD loader once per OpenCL version whose functions the
#    provider calls ("ocl-icd-libopencl1 | libopencl1", "ocl-icd-libopencl1
#    | libopencl-1.1-1 | libopencl1", "ocl-icd-libopencl1 (>= 1.0) |
#    libopencl-1.2-1"). An entry whose alternatives include all of another
#    entry's is implied by it and dropped, as is a repeated entry; what is
#    left means the same (here: a loader, and one with OpenCL 1.2).

cmake_policy(VERSION 3.25) # IN_LIST: a script starts with no policies set

# minfer_simplify_depends(OUT "a | b, c, ...")
function(minfer_simplify_depends out deps)
  string(REPLACE ", " ";" entries "${deps}")
  list(REMOVE_DUPLICATES entries)
  set(kept)
  foreach(a IN LISTS entries)
    string(REPLACE " | " ";" alts_a "${a}")
    list(LENGTH alts_a n_a)
    set(implied FALSE)
    foreach(b IN LISTS entries)
      string(REPLACE " | " ";" alts_b "${b}")
      list(LENGTH alts_b n_b)
      if(NOT n_b LESS n_a)
        continue()
      endif()
      set(subset TRUE)
      foreach(x IN LISTS alts_b)
        if(NOT x IN_LIST alts_a)
          set(subset FALSE)
          break()
        endif()
      endforeach()
      if(subset)
        set(implied TRUE)
        break()
      endif()
    endforeach()
    if(NOT implied)
      list(APPEND kept "${a}")
    endif()
  endforeach()
  list(JOIN kept ", " joined)
  set(${out} "${joined}" PARENT_SCOPE)
endfunction()

find_program(_dpkg_deb dpkg-deb REQUIRED)
foreach(_deb IN LISTS CPACK_PACKAGE_FILES)
  if(NOT _deb MATCHES "\\.deb$")
    continue()
  endif()
  set(_dir "${_deb}.fixup")
  file(REMOVE_RECURSE "${_dir}")
  execute_process(COMMAND ${_dpkg_deb} -R "${_deb}" "${_dir}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb -R ${_deb} failed")
  endif()
  # A paragraph of "Field: value" lines, continuation lines starting with a
  # space; none holds ';' (Debian control fields do not), so list() is safe.
  file(STRINGS "${_dir}/DEBIAN/control" _lines)
  set(_package)
  set(_multiarch)
  set(_out)
  foreach(_line IN LISTS _lines)
    if(_line STREQUAL "" OR _line MATCHES "^Multi-Arch:")
      continue()
    elseif(_line MATCHES "^Package: (.*)$")
      set(_package "${CMAKE_MATCH_1}")
    elseif(_line MATCHES "^Depends: (.*)$")
      minfer_simplify_depends(_deps "${CMAKE_MATCH_1}")
      set(_line "Depends: ${_deps}")
    endif()
    string(APPEND _out "${_line}\n")
  endforeach()
  foreach(_pair IN LISTS CPACK_MINFER_MULTIARCH)
    if(_pair MATCHES "^${_package}=(.+)$")
      string(APPEND _out "Multi-Arch: ${CMAKE_MATCH_1}\n")
    endif()
  endforeach()
  file(WRITE "${_dir}/DEBIAN/control" "${_out}")
  execute_process(COMMAND ${_dpkg_deb} --root-owner-group -Zxz --build "${_dir}" "${_deb}"
    OUTPUT_QUIET RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --build ${_deb} failed")
  endif()
  file(REMOVE_RECURSE "${_dir}")
endforeach()
