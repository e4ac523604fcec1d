# Debian's hardening flags, as dpkg-buildflags gives them with
# DEB_BUILD_MAINT_OPTIONS=hardening=+all (what a Debian package build uses):
# _FORTIFY_SOURCE, the stack protector, format-string checks, and a
# read-only GOT bound at load (relro, now). Every binary of the build gets
# them, so the Debian packages cpack makes from it are hardened (lintian
# --display-info: no hardening-* tags). Off with -DMINFER_HARDENING=OFF;
# not in sanitizer builds (the sanitizers check more, and ASan replaces the
# fortified functions), and _FORTIFY_SOURCE only where the build optimizes
# (it needs -O). Without dpkg-buildflags (not Debian) nothing changes.
option(MINFER_HARDENING "Debian's hardening flags (dpkg-buildflags, hardening=+all)" ON)

if(MINFER_HARDENING AND NOT CMAKE_C_FLAGS MATCHES "sanitize")
  find_program(MINFER_DPKG_BUILDFLAGS dpkg-buildflags)
  if(MINFER_DPKG_BUILDFLAGS)
    set(_minfer_optimized OFF)
    if(CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo|MinSizeRel)$")
      set(_minfer_optimized ON)
    endif()
    set(_minfer_hardening)
    foreach(_v CPPFLAGS CFLAGS LDFLAGS)
      execute_process(
        COMMAND ${CMAKE_COMMAND} -E env DEB_BUILD_MAINT_OPTIONS=hardening=+all
                ${MINFER_DPKG_BUILDFLAGS} --get ${_v}
        OUTPUT_VARIABLE _flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0)
        continue()
      endif()
      separate_arguments(_flags UNIX_COMMAND "${_flags}")
      # Only the hardening flags: the optimization level, -g and the
      # file-prefix map stay the build's own.
      foreach(_f IN LISTS _flags)
        if(_f MATCHES "^-D_FORTIFY_SOURCE=")
          if(_minfer_optimized)
            add_compile_options(${_f})
            list(APPEND _minfer_hardening ${_f})
          endif()
        elseif(_f MATCHES "^-f(stack-protector|stack-clash-protection|cf-protection)" OR
               _f MATCHES "^-W(format|error=format-security)")
          add_compile_options(${_f})
          list(APPEND _minfer_hardening ${_f})
        elseif(_f MATCHES "^-Wl,-z,(relro|now)$")
          add_link_options(${_f})
          list(APPEND _minfer_hardening ${_f})
        endif()
      endforeach()
    endforeach()
    list(JOIN _minfer_hardening " " _minfer_hardening)
    message(STATUS "Hardening (dpkg-buildflags): ${_minfer_hardening}")
  endif()
endif()
