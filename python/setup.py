# SPDX-License-Identifier: MIT
"""Build of the Python package bloomkit (python/README.md, section Install).

Compiles every python/src/*.c into the extension bloomkit._bloomkit against
an installed bloomkit (the C library: headers and the five component
libraries core, fbf, cbf, kbf, bloomclock) and packages python/bloomkit/
(*.py, *.pyi, py.typed). The library is found, when the extension is built
(not for metadata), through `pkg-config bloomkit` (PKG_CONFIG_PATH,
PKG_CONFIG_SYSROOT_DIR and PKG_CONFIG, the program's name, are honoured),
else in the default prefix /usr/local (include/ and lib/); neither is a
clear error. When the libraries' directory is not one the loader searches
on its own (/usr/lib, /lib, their <multiarch> and lib64 forms), the
extension gets a run path to it, so it loads without LD_LIBRARY_PATH; with
PKG_CONFIG_SYSROOT_DIR the run path is the directory without the sysroot
(where the files will be at run time: the Debian build stages the
libraries in debian/tmp). The version is the project's, from project() in
the top-level CMakeLists.txt beside python/, else (a copy of python/ alone)
pkg-config's --modversion. No network, no code generator.
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PREFIX = "/usr/local"
# Dependents before what they depend on, as the umbrella bloomkit.pc lists
# them (the order a static link would need).
COMPONENTS = ("kbf", "bloomclock", "cbf", "fbf", "core")


def fail(message):
    sys.exit("bloomkit setup.py: error: " + message)


def pkg_config(*args):
    """pkg-config's output for the umbrella package bloomkit, or None when
    pkg-config is missing or does not know bloomkit."""
    cmd = shlex.split(os.environ.get("PKG_CONFIG", "pkg-config"))
    try:
        out = subprocess.run(cmd + list(args) + ["bloomkit"], check=True,
                             capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def project_version():
    cmake = os.path.join(HERE, os.pardir, "CMakeLists.txt")
    if os.path.exists(cmake):
        with open(cmake, encoding="utf-8") as f:
            m = re.search(r"^project\(\s*bloomkit\s+VERSION\s+([0-9][0-9.]*)",
                          f.read(), re.M)
        if not m:
            fail(cmake + " has no project(bloomkit VERSION x.y.z)")
        return m.group(1)
    version = pkg_config("--modversion")
    if not version:
        fail("no version: " + cmake + " is missing (python/ outside its "
             "checkout) and pkg-config does not know bloomkit")
    return version


def system_lib_dirs():
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = {"/lib", "/usr/lib", "/lib64", "/usr/lib64"}
    if multiarch:
        dirs |= {"/lib/" + multiarch, "/usr/lib/" + multiarch}
    return {os.path.realpath(d) for d in dirs}


def run_path(libdir):
    """Where libdir will be at run time (the sysroot taken off), or None
    when the loader searches it on its own."""
    d = os.path.realpath(libdir)
    sysroot = os.environ.get("PKG_CONFIG_SYSROOT_DIR")
    if sysroot:
        root = os.path.realpath(sysroot)
        if d.startswith(root + os.sep):
            d = d[len(root):]
    return None if d in system_lib_dirs() else d


def from_pkg_config():
    cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
    if cflags is None or libs is None:
        return None
    found = {"include_dirs": [], "extra_compile_args": [], "library_dirs": [],
             "libraries": [], "extra_link_args": []}
    for t in shlex.split(cflags):
        if t.startswith("-I"):
            found["include_dirs"].append(t[2:])
        else:
            found["extra_compile_args"].append(t)
    for t in shlex.split(libs):
        if t.startswith("-L"):
            found["library_dirs"].append(t[2:])
        elif t.startswith("-l"):
            found["libraries"].append(t[2:])
        else:
            found["extra_link_args"].append(t)
    missing = [c for c in COMPONENTS if "bloomkit_" + c not in found["libraries"]]
    if missing:
        fail("pkg-config --libs bloomkit gives no -lbloomkit_" +
             ", -lbloomkit_".join(missing) + " (the extension needs every "
             "component: " + ", ".join(COMPONENTS) + ")")
    found["how"] = "pkg-config bloomkit"
    return found


def from_default_prefix():
    include = os.path.join(DEFAULT_PREFIX, "include")
    if not os.path.exists(os.path.join(include, "bloomkit", "bloom.h")):
        return None
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for sub in ("lib/" + multiarch if multiarch else "lib", "lib64", "lib"):
        libdir = os.path.join(DEFAULT_PREFIX, sub)
        have = [c for c in COMPONENTS
                if os.path.exists(os.path.join(libdir, "libbloomkit_%s.so" % c))]
        if have:
            break
    missing = [c for c in COMPONENTS if c not in have]
    if missing:
        fail("%s/include has bloomkit's headers but %s/lib has no "
             "libbloomkit_%s.so" % (DEFAULT_PREFIX, DEFAULT_PREFIX,
                                    ".so, libbloomkit_".join(missing)))
    return {"include_dirs": [include], "extra_compile_args": [],
            "library_dirs": [libdir], "extra_link_args": [],
            "libraries": ["bloomkit_" + c for c in COMPONENTS],
            "how": "the default prefix " + DEFAULT_PREFIX}


class BuildExt(build_ext):
    """Finds the library only when the extension is built, so metadata
    (egg_info, sdist) needs no installed bloomkit."""

    def build_extensions(self):
        found = from_pkg_config() or from_default_prefix()
        if found is None:
            fail("bloomkit's C library was not found: `pkg-config bloomkit` "
                 "does not know it (PKG_CONFIG_PATH=%s) and %s has no "
                 "include/bloomkit/bloom.h. Install it first (from the "
                 "checkout: cmake -S . -B build && cmake --build build && "
                 "cmake --install build; or the Debian package "
                 "libbloomkit-dev), or point PKG_CONFIG_PATH at "
                 "<prefix>/lib/pkgconfig."
                 % (os.environ.get("PKG_CONFIG_PATH", ""), DEFAULT_PREFIX))
        rpath = [d for d in map(run_path, found["library_dirs"]) if d]
        print("bloomkit setup.py: the library from %s: -I %s -L %s%s"
              % (found["how"], " ".join(found["include_dirs"]),
                 " ".join(found["library_dirs"]),
                 ", run path " + ":".join(rpath) if rpath else ""))
        for ext in self.extensions:
            for key in ("include_dirs", "library_dirs", "libraries",
                        "extra_compile_args", "extra_link_args"):
                getattr(ext, key).extend(found[key])
            ext.runtime_library_dirs.extend(rpath)
        super().build_extensions()


def here(pattern):
    # Paths relative to python/ (setuptools runs setup.py from there).
    return sorted(glob.glob(pattern, root_dir=HERE))


setup(
    version=project_version(),
    packages=["bloomkit"],
    package_data={"bloomkit": ["*.pyi", "py.typed"]},
    ext_modules=[Extension(
        "bloomkit._bloomkit",
        sources=here("src/*.c"),
        depends=here("src/*.h"),
        # As CMake builds it: C11, only PyInit__bloomkit exported.
        extra_compile_args=["-std=c11", "-fvisibility=hidden"],
    )],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
)
