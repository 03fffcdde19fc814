#!/usr/bin/env bash
# Installs pi-hooks for C and C++ plugin authors under a prefix:
#
#   PREFIX/bin/pi-hooks                                     the host, built in release mode
#   PREFIX/include/pi-hooks/pi_hooks.h, pi_hooks.hpp        the headers
#   PREFIX/lib/pkgconfig/pi-hooks.pc                        cc $(pkg-config --cflags pi-hooks)
#   PREFIX/lib/cmake/pi-hooks/pi-hooksConfig.cmake          find_package(pi-hooks), with the
#   PREFIX/lib/cmake/pi-hooks/pi-hooksConfigVersion.cmake   INTERFACE target pi-hooks::headers
#
# The package files find the headers relative to themselves, so the prefix can be moved.
#
# usage: scripts/install.sh --prefix DIR [--binary FILE]
#   --prefix DIR    where to install (created when missing), for example ~/.local or /usr/local
#   --binary FILE   install this pi-hooks binary instead of building one with
#                   `cargo build --release -p pi-hooks`
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
    echo "usage: scripts/install.sh --prefix DIR [--binary FILE]" >&2
    echo "  (see the comment at the top of scripts/install.sh)" >&2
    exit 2
}

prefix=""
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || usage; prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --binary) [ $# -ge 2 ] || usage; binary="$2"; shift 2 ;;
        --binary=*) binary="${1#--binary=}"; shift ;;
        -h | --help) usage ;;
        *) echo "error: unknown argument '$1'" >&2; usage ;;
    esac
done
if [ -z "$prefix" ]; then
    echo "error: --prefix DIR is required" >&2
    usage
fi
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"

# Versions: the package's from the workspace Cargo.toml, the ABI's from the header.
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
abi_major="$(sed -n 's/^#define PI_HOOKS_ABI_MAJOR \([0-9]*\)$/\1/p' include/pi_hooks.h)"
abi_minor="$(sed -n 's/^#define PI_HOOKS_ABI_MINOR \([0-9]*\)$/\1/p' include/pi_hooks.h)"
if [ -z "$version" ] || [ -z "$abi_major" ] || [ -z "$abi_minor" ]; then
    echo "error: cannot read the version from Cargo.toml or the ABI version from include/pi_hooks.h" >&2
    exit 1
fi

if [ -z "$binary" ]; then
    echo "building pi-hooks $version (release)"
    cargo build --release --locked -p pi-hooks
    binary="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/pi-hooks"
fi
if [ ! -f "$binary" ]; then
    echo "error: no pi-hooks binary at $binary" >&2
    exit 1
fi

install -d "$prefix/bin" "$prefix/include/pi-hooks" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/pi-hooks"
install -m 0755 "$binary" "$prefix/bin/pi-hooks"
install -m 0644 include/pi_hooks.h include/pi_hooks.hpp "$prefix/include/pi-hooks/"

cat >"$prefix/lib/pkgconfig/pi-hooks.pc" <<PC
# pkg-config file of pi-hooks, written by scripts/install.sh. The prefix is found from this
# file's own place, so the installed tree can be moved.
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include/pi-hooks
abi_version=$abi_major.$abi_minor

Name: pi-hooks
Description: Headers for pi-hooks native plugins in C and C++ (plugin ABI $abi_major.$abi_minor)
Version: $version
Cflags: -I\${includedir}
PC

cat >"$prefix/lib/cmake/pi-hooks/pi-hooksConfig.cmake" <<CMAKE
# CMake package of pi-hooks, written by scripts/install.sh. Plugins are shared libraries that
# need only the headers:
#
#   find_package(pi-hooks REQUIRED)
#   add_library(my_plugin MODULE my_plugin.c)
#   target_link_libraries(my_plugin PRIVATE pi-hooks::headers)
#
# Defines the INTERFACE target pi-hooks::headers (the include directory), and the variables
# pi-hooks_INCLUDE_DIRS, PI_HOOKS_ABI_VERSION ($abi_major.$abi_minor) and PI_HOOKS_EXECUTABLE
# (the installed pi-hooks binary, for example to run \`pi-hooks inspect\` after a build).
get_filename_component(_pi_hooks_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET pi-hooks::headers)
  add_library(pi-hooks::headers INTERFACE IMPORTED)
  set_target_properties(pi-hooks::headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "\${_pi_hooks_prefix}/include/pi-hooks")
endif()
set(pi-hooks_INCLUDE_DIRS "\${_pi_hooks_prefix}/include/pi-hooks")
set(PI_HOOKS_ABI_VERSION "$abi_major.$abi_minor")
set(PI_HOOKS_EXECUTABLE "\${_pi_hooks_prefix}/bin/pi-hooks")
unset(_pi_hooks_prefix)
CMAKE

cat >"$prefix/lib/cmake/pi-hooks/pi-hooksConfigVersion.cmake" <<CMAKE
# Version of the pi-hooks CMake package, written by scripts/install.sh: compatible with a
# request of the same major version that is not newer than this one.
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  string(REGEX MATCH "^[0-9]+" _pi_hooks_major "\${PACKAGE_VERSION}")
  if(PACKAGE_FIND_VERSION_MAJOR STREQUAL _pi_hooks_major)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
  unset(_pi_hooks_major)
endif()
CMAKE

echo "installed pi-hooks $version (plugin ABI $abi_major.$abi_minor) under $prefix:"
echo "  $prefix/bin/pi-hooks"
echo "  $prefix/include/pi-hooks/pi_hooks.h, pi_hooks.hpp"
echo "  $prefix/lib/pkgconfig/pi-hooks.pc                 (cc \$(pkg-config --cflags pi-hooks))"
echo "  $prefix/lib/cmake/pi-hooks/pi-hooksConfig.cmake   (find_package(pi-hooks), pi-hooks::headers)"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on PATH; add it to run pi-hooks by name" ;;
esac
if [ "$prefix" != /usr ] && [ "$prefix" != /usr/local ]; then
    echo "note: set PKG_CONFIG_PATH=$prefix/lib/pkgconfig and CMAKE_PREFIX_PATH=$prefix unless your tools already look there"
fi
