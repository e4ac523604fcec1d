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
#    left means the same (here: a loader, and one with OpenCL 1.2);
#  - no .comment section in the ELF files (the compiler's version strings,
#    which dh_strip removes and CPack's strip keeps; lintian's
#    binary-has-unneeded-section), DEBIAN/md5sums rewritten to match;
#  - no maintainer script that only runs ldconfig: CPack writes postinst and
#    postrm calling it for a library in /usr/lib, where the package's
#    ldconfig trigger (DEBIAN/triggers) already does the work (lintian's
#    maintscript-calls-ldconfig).

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
find_program(_objcopy objcopy REQUIRED)

# The ELF files under dir (not DEBIAN/) lose their .comment section; the
# md5sums of the files changed are recomputed.
function(minfer_drop_comments dir)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${dir}/*")
  set(changed FALSE)
  foreach(f IN LISTS files)
    if(f MATCHES "^${dir}/DEBIAN/" OR IS_SYMLINK "${f}")
      continue()
    endif()
    file(READ "${f}" magic LIMIT 4 HEX)
    if(NOT magic STREQUAL "7f454c46")
      continue()
    endif()
    execute_process(COMMAND ${_objcopy} --remove-section=.comment "${f}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "objcopy --remove-section=.comment ${f} failed")
    endif()
    set(changed TRUE)
  endforeach()
  if(changed AND EXISTS "${dir}/DEBIAN/md5sums")
    file(STRINGS "${dir}/DEBIAN/md5sums" lines)
    set(out)
    foreach(line IN LISTS lines)
      if(line MATCHES "^[0-9a-f]+  (.+)$")
        set(path "${CMAKE_MATCH_1}")
        file(MD5 "${dir}/${path}" sum)
        string(APPEND out "${sum}  ${path}\n")
      endif()
    endforeach()
    file(WRITE "${dir}/DEBIAN/md5sums" "${out}")
  endif()
endfunction()

# postinst/postrm as CPack writes them for ldconfig alone go, where the
# package activates the ldconfig trigger.
function(minfer_drop_ldconfig_scripts dir)
  if(NOT EXISTS "${dir}/DEBIAN/triggers")
    return()
  endif()
  file(READ "${dir}/DEBIAN/triggers" triggers)
  if(NOT triggers MATCHES "activate-noawait ldconfig")
    return()
  endif()
  foreach(script postinst postrm)
    set(f "${dir}/DEBIAN/${script}")
    if(NOT EXISTS "${f}")
      continue()
    endif()
    file(READ "${f}" text)
    string(REGEX REPLACE "[ \t\n]+" " " flat "${text}")
    if(flat MATCHES "^#!/bin/sh set -e if \\[ \"\\$1\" = \"[a-z]+\" \\]; then ldconfig fi ?$")
      file(REMOVE "${f}")
    endif()
  endforeach()
endfunction()
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
  minfer_drop_comments("${_dir}")
  minfer_drop_ldconfig_scripts("${_dir}")
  execute_process(COMMAND ${_dpkg_deb} --root-owner-group -Zxz --build "${_dir}" "${_deb}"
    OUTPUT_QUIET RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --build ${_deb} failed")
  endif()
  file(REMOVE_RECURSE "${_dir}")
endforeach()
