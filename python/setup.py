"""Builds minfer._minfer for pip (metadata in pyproject.toml).

    pip install --no-build-isolation .      (offline: Debian's setuptools and wheel)

Where libminfer comes from, the first that applies:
  1. MINFER_BUILD_DIR=DIR, a CMake build directory of minfer: its
     libminfer.so.0 and provider libraries are copied into the package;
  2. pkg-config finds minfer (an installed libminfer-dev, such as the Debian
     package): the extension links to that library where it is installed;
  3. else the C library is built from the source tree this folder is in
     (cmake, with tests off) and copied into the package as in 1.
A copied library sits at minfer/libminfer.so.0 with its providers in
minfer/minfer/providers/, where libminfer looks for them (next to itself,
docs/providers.md), and the extension finds it through RPATH $ORIGIN.
"""

import glob
import os
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TREE = os.path.dirname(HERE)


def _pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "minfer"], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.split()


def _cmake_build(build_temp):
    """Builds libminfer and its providers from the source tree; returns the build directory."""
    if not os.path.exists(os.path.join(SOURCE_TREE, "core", "CMakeLists.txt")):
        sys.exit("setup.py: no libminfer: set MINFER_BUILD_DIR, install libminfer-dev, "
                 "or build from the minfer source tree")
    build = os.path.join(os.path.abspath(build_temp), "minfer-cmake")
    subprocess.run(["cmake", "-S", SOURCE_TREE, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                    "-DMINFER_BUILD_TESTS=OFF", "-DMINFER_PYTHON=OFF"], check=True)
    subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)], check=True)
    return build


class BuildExt(build_ext):
    def run(self):
        ext = self.extensions[0]
        ext.include_dirs.append(numpy.get_include())
        build_dir = os.environ.get("MINFER_BUILD_DIR")
        flags = None if build_dir else _pkg_config("--cflags", "--libs")
        if flags is not None:
            ext.include_dirs += [f[2:] for f in flags if f.startswith("-I")]
            ext.library_dirs += [f[2:] for f in flags if f.startswith("-L")]
            ext.libraries += [f[2:] for f in flags if f.startswith("-l")]
            libdir = (_pkg_config("--variable=libdir") or [""])[0]
            if libdir and libdir not in ("/usr/lib", "/usr/lib64") and not libdir.startswith("/usr/lib/"):
                ext.runtime_library_dirs.append(libdir)
            super().run()
            return
        if not build_dir:
            build_dir = _cmake_build(self.build_temp)
        build_dir = os.path.abspath(build_dir)
        libs = glob.glob(os.path.join(build_dir, "core", "libminfer.so.*"))
        soname = [p for p in libs if os.path.basename(p).count(".") == 2]  # libminfer.so.0
        if not soname:
            sys.exit("setup.py: no libminfer.so.0 in %s/core (build it first)" % build_dir)
        ext.include_dirs.append(os.path.join(SOURCE_TREE, "include"))
        ext.library_dirs.append(os.path.join(build_dir, "core"))
        ext.libraries.append("minfer")
        ext.extra_link_args.append("-Wl,-rpath,$ORIGIN")
        super().run()
        package = os.path.join(self.build_lib, "minfer")
        shutil.copy2(os.path.realpath(soname[0]), os.path.join(package, "libminfer.so.0"))
        providers = os.path.join(package, "minfer", "providers")
        os.makedirs(providers, exist_ok=True)
        for p in glob.glob(os.path.join(build_dir, "providers", "*.so")):
            shutil.copy2(p, providers)


setup(
    ext_modules=[
        Extension(
            "minfer._minfer",
            sources=["src/minfer_module.c"],
            include_dirs=[os.path.join(SOURCE_TREE, "include")] if os.path.isdir(os.path.join(SOURCE_TREE, "include")) else [],
            extra_compile_args=["-std=c11"],
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
