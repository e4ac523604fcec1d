# Writes OUT, a C file defining minfer_ocl_source: the .cl files in SOURCES
# concatenated, as one NUL-terminated string.
#   cmake -DOUT=kernels_src.c -DSOURCES=a.cl,b.cl -P embed.cmake
string(REPLACE "," ";" SOURCES "${SOURCES}")
set(hex "")
foreach(src IN LISTS SOURCES)
  file(READ "${src}" part HEX)
  string(APPEND hex "${part}0a")
endforeach()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
       bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from providers/opencl/kernels by embed.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "__attribute__((visibility(\"hidden\"))) extern const char minfer_ocl_source[];\n"
  "const char minfer_ocl_source[] = {\n${bytes}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
