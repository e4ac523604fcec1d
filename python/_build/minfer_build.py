"""minfer's PEP 517 build backend: builds the minfer wheel with the Python
standard library and a C compiler alone, so that

    pip install ./python

works offline, with or without build isolation (pyproject.toml names this
file with backend-path and requires nothing to be downloaded).

Where libminfer comes from, the first that applies (the choice is printed on
stderr, shown by `pip install -v`, and kept in the package:
minfer.get_build_info()):
  1. MINFER_BUILD_DIR=DIR, a CMake build directory of minfer: its
     libminfer.so.0, providers and plugins are copied into the package, which
     is then self-contained: minfer/libminfer.so.0, with its providers in
     minfer/minfer/providers and its plugins in minfer/minfer/plugins, where
     libminfer looks for them (next to itself, docs/providers.md,
     docs/plugins.md); the extension finds it through RPATH $ORIGIN;
  2. an installed libminfer-dev found by `pkg-config minfer`: the extension
     links to that library where it is installed, and uses its providers and
     plugins;
  3. else the C library is built from the source tree this folder is in
     (cmake, tests off: minutes), saying so, then copied in as in 1.
"""

import base64
import glob
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
SOURCE_TREE = os.path.dirname(HERE)
PACKAGES = ("minfer", "minfer/capi")


def _say(msg):
    print("minfer build: %s" % msg, file=sys.stderr, flush=True)


def _fail(msg):
    raise SystemExit("minfer build: %s" % msg)


# ---- metadata ---------------------------------------------------------------------


def _project():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib
        except ImportError:
            _fail("reading pyproject.toml needs Python 3.11 (tomllib) or the tomli package")
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _license_file():
    for d in (HERE, SOURCE_TREE):
        p = os.path.join(d, "LICENSE")
        if os.path.isfile(p):
            return p
    return None


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
        "Summary: %s" % p.get("description", ""),
        "Requires-Python: %s" % p.get("requires-python", ""),
    ]
    lic = p.get("license", {})
    if isinstance(lic, dict) and "text" in lic:
        lines.append("License: %s" % lic["text"])
    for c in p.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    for d in p.get("dependencies", []):
        lines.append("Requires-Dist: %s" % d)
    if _license_file():
        lines.append("License-File: LICENSE")
    readme = p.get("readme")
    body = ""
    if readme and os.path.isfile(os.path.join(HERE, readme)):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _tag():
    impl = sys.implementation.cache_tag.replace("cpython-", "cp")  # cp311
    abi = impl + sys.abiflags
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (impl, abi, plat)


def _dist_info():
    p = _project()
    return "%s-%s.dist-info" % (p["name"], p["version"])


# ---- where libminfer comes from ---------------------------------------------------


def _pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "minfer"], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.split()


def _cmake_build(tmp):
    if not os.path.exists(os.path.join(SOURCE_TREE, "core", "CMakeLists.txt")):
        _fail("no libminfer: set MINFER_BUILD_DIR to a minfer build directory, install "
              "libminfer-dev (pkg-config minfer), or build from the minfer source tree")
    build = os.path.join(tmp, "minfer-cmake")
    _say("no MINFER_BUILD_DIR and no libminfer-dev (pkg-config minfer): building the C library "
         "from %s with cmake (tests off; this takes minutes; set MINFER_BUILD_DIR=DIR to use "
         "a build directory instead)" % SOURCE_TREE)
    try:
        subprocess.run(["cmake", "-S", SOURCE_TREE, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DMINFER_BUILD_TESTS=OFF", "-DMINFER_PYTHON=OFF"], check=True,
                       stdout=sys.stderr)
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)], check=True,
                       stdout=sys.stderr)
    except (OSError, subprocess.CalledProcessError) as e:
        _fail("building libminfer with cmake failed (%s)" % e)
    return build


class _Link:
    """How the extension links libminfer, and what the package carries."""

    def __init__(self, tmp):
        self.cflags, self.ldflags, self.copies = [], [], []  # copies: (src, path in the wheel)
        build_dir = os.environ.get("MINFER_BUILD_DIR")
        flags = None if build_dir else _pkg_config("--cflags", "--libs")
        if flags is not None:
            libdir = (_pkg_config("--variable=libdir") or [""])[0]
            self.cflags = [f for f in flags if f.startswith("-I")]
            self.ldflags = [f for f in flags if not f.startswith("-I")]
            if libdir and libdir not in ("/usr/lib", "/usr/lib64") and not libdir.startswith("/usr/lib/"):
                self.ldflags.append("-Wl,-rpath," + libdir)
            self.info = "links the installed libminfer (pkg-config minfer, libdir %s) and uses its " \
                        "providers and plugins" % (libdir or "?")
            _say(self.info)
            return
        if build_dir:
            origin = "MINFER_BUILD_DIR=%s" % build_dir
        else:
            build_dir = _cmake_build(tmp)
            origin = "built from the source tree %s" % SOURCE_TREE
        build_dir = os.path.abspath(build_dir)
        libs = [p for p in glob.glob(os.path.join(build_dir, "core", "libminfer.so.*"))
                if os.path.basename(p).count(".") == 2]  # libminfer.so.0
        if not libs:
            _fail("no libminfer.so.0 in %s/core (build minfer there first)" % build_dir)
        include = os.path.join(SOURCE_TREE, "include")
        if not os.path.isdir(include):
            _fail("no include/ beside python/ (%s): the minfer headers are needed" % include)
        self.cflags = ["-I" + include]
        self.ldflags = ["-L" + os.path.join(build_dir, "core"), "-lminfer", "-Wl,-rpath,$ORIGIN"]
        self.copies.append((os.path.realpath(libs[0]), "minfer/libminfer.so.0"))
        providers = sorted(glob.glob(os.path.join(build_dir, "providers", "*.so")))
        plugins = sorted(glob.glob(os.path.join(build_dir, "plugins", "libminfer_plugin_*.so")))
        if not any(os.path.basename(p) == "libminfer_provider_cpu.so" for p in providers):
            _fail("no providers/libminfer_provider_cpu.so in %s" % build_dir)
        for p in providers:
            self.copies.append((p, "minfer/minfer/providers/" + os.path.basename(p)))
        for p in plugins:
            self.copies.append((p, "minfer/minfer/plugins/" + os.path.basename(p)))
        # The CLI, for python3 -m minfer (run with the package's libminfer).
        cli = os.path.join(build_dir, "tools", "minfer")
        if os.access(cli, os.X_OK):
            self.copies.append((cli, "minfer/bin/minfer"))
        self.info = "carries its own libminfer (%s)%s: providers %s; plugins %s" % (
            origin, " and the minfer CLI" if os.access(cli, os.X_OK) else "",
            ", ".join(os.path.basename(p) for p in providers),
            ", ".join(os.path.basename(p) for p in plugins) or "none",
        )
        _say(self.info)


def _numpy_include():
    """numpy's C headers, from the interpreter pip installs for (numpy is a
    run-time dependency; an isolated build environment hides it, so it is
    asked without pip's build-environment paths)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    try:
        out = subprocess.run([sys.executable, "-c", "import numpy; print(numpy.get_include())"],
                             check=True, capture_output=True, text=True, env=env)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    for pattern in ("/usr/lib/python3/dist-packages/numpy/core/include",
                    os.path.join(sysconfig.get_paths()["include"], "numpy", "..")):
        if os.path.isfile(os.path.join(pattern, "numpy", "arrayobject.h")):
            return os.path.abspath(pattern)
    _fail("numpy's C headers were not found (install python3-numpy or numpy)")


def _compile(link, out_dir):
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    name = "_minfer" + sysconfig.get_config_var("EXT_SUFFIX")
    out = os.path.join(out_dir, name)
    cmd = cc + ["-shared", "-fPIC", "-O2", "-g0", "-std=c11", "-Wall",
                "-I" + sysconfig.get_paths()["include"], "-I" + _numpy_include(), *link.cflags,
                os.path.join(HERE, "src", "minfer_module.c"), "-o", out, *link.ldflags]
    _say(" ".join(cmd))
    try:
        subprocess.run(cmd, check=True, stdout=sys.stderr)
    except (OSError, subprocess.CalledProcessError) as e:
        _fail("compiling the extension failed (%s)" % e)
    return out, "minfer/" + name


# ---- the wheel ---------------------------------------------------------------------


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(wheel_directory, files):
    """files: [(path in the wheel, bytes, executable)]."""
    p = _project()
    dist = _dist_info()
    name = "%s-%s-%s.whl" % (p["name"], p["version"], _tag())
    files = list(files)
    files.append((dist + "/METADATA", _metadata().encode(), False))
    wheel = "Wheel-Version: 1.0\nGenerator: minfer_build\nRoot-Is-Purelib: false\nTag: %s\n" % _tag()
    files.append((dist + "/WHEEL", wheel.encode(), False))
    lic = _license_file()
    if lic:
        with open(lic, "rb") as f:
            files.append((dist + "/LICENSE", f.read(), False))
    record = [_record_line(path, data) for path, data, _ in files] + [dist + "/RECORD,,"]
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode(), False))
    target = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, executable in files:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            # The file type too: pip keeps the x bits only of what reads as a regular file.
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 hooks --------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist, exist_ok=True)
    with open(os.path.join(dist, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(dist, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nGenerator: minfer_build\nRoot-Is-Purelib: false\nTag: %s\n" % _tag())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory(prefix="minfer-build.") as tmp:
        link = _Link(tmp)
        ext, ext_path = _compile(link, tmp)
        files = []
        for pkg in PACKAGES:
            for py in sorted(glob.glob(os.path.join(HERE, pkg, "*.py"))):
                if os.path.basename(py) == "_build_info.py":
                    continue
                files.append((pkg + "/" + os.path.basename(py), _read(py), False))
        info = "minfer %s: %s\n" % (_project()["version"], link.info)
        files.append(("minfer/_build_info.py", ("BUILD_INFO = %r\n" % info.strip()).encode(), False))
        files.append((ext_path, _read(ext), True))
        for src, path in link.copies:
            files.append((path, _read(src), True))
        return _write_wheel(wheel_directory, files)


def build_sdist(sdist_directory, config_settings=None):
    """The python/ folder as a source archive (it builds against an installed
    libminfer-dev or MINFER_BUILD_DIR, as it has no C library sources)."""
    import tarfile

    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "_build", "src", "minfer"):
            src = os.path.join(HERE, rel)
            if os.path.exists(src):
                t.add(src, arcname=base + "/" + rel,
                      filter=lambda i: None if "__pycache__" in i.name else i)
        lic = _license_file()
        if lic:
            t.add(lic, arcname=base + "/LICENSE")
        pkg_info = os.path.join(tempfile.mkdtemp(), "PKG-INFO")
        with open(pkg_info, "w", encoding="utf-8") as f:
            f.write(_metadata())
        t.add(pkg_info, arcname=base + "/PKG-INFO")
        shutil.rmtree(os.path.dirname(pkg_info))
    return name
