#!/usr/bin/env bash
# Builds the C and C++ example plugins and checks the C headers, so that they never rot.
#
#   plugins/examples/<name>/*.c, *.cpp  ->  target/c-plugins/lib<name with - as _>.so
#
# C is built with  $CC  -std=c11   -Wall -Wextra -Werror -pedantic (CC defaults to cc),
# C++ with         $CXX -std=c++17 -Wall -Wextra -Werror           (CXX defaults to c++),
# plugins with -fvisibility=hidden: only the entry symbol (PI_HOOKS_EXPORT) is exported, which
# the script checks with nm.
# Then, without building anything: tests/c/header_twice.c (pi_hooks.h included twice, C11),
# tests/c/header_cpp.cpp (both headers, C++17), pi_hooks.h alone as C99 and C++11, and the
# example plugin in the overview comment of pi_hooks.h; finally tests/c/protected_paths_test.c
# is built and run. Any error fails the script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CC="${CC:-cc}"
CXX="${CXX:-c++}"
CFLAGS_STRICT=(-std=c11 -Wall -Wextra -Werror -pedantic)
CXXFLAGS_STRICT=(-std=c++17 -Wall -Wextra -Werror)
OUT=target/c-plugins
mkdir -p "$OUT/obj" "$OUT/tests"

built=0
for dir in plugins/examples/*/; do
    dir="${dir%/}"
    name="$(basename "$dir")"
    shopt -s nullglob
    c_files=("$dir"/*.c)
    cpp_files=("$dir"/*.cpp)
    shopt -u nullglob
    if [ ${#c_files[@]} -eq 0 ] && [ ${#cpp_files[@]} -eq 0 ]; then
        continue
    fi
    lib="$OUT/lib${name//-/_}.so"
    sources=(${c_files[@]+"${c_files[@]}"} ${cpp_files[@]+"${cpp_files[@]}"})
    if [ ${#cpp_files[@]} -eq 0 ]; then
        "$CC" "${CFLAGS_STRICT[@]}" -fvisibility=hidden -shared -fPIC -I include -o "$lib" "${c_files[@]}"
    else
        # C++ present: C files become objects, C++ links the library.
        objects=()
        for c in "${c_files[@]}"; do
            obj="$OUT/obj/${name}-$(basename "${c%.c}").o"
            "$CC" "${CFLAGS_STRICT[@]}" -fvisibility=hidden -c -fPIC -I include -o "$obj" "$c"
            objects+=("$obj")
        done
        "$CXX" "${CXXFLAGS_STRICT[@]}" -fvisibility=hidden -shared -fPIC -I include -o "$lib" \
            "${cpp_files[@]}" ${objects[@]+"${objects[@]}"}
    fi
    if command -v nm >/dev/null 2>&1 && ! nm -D "$lib" 2>/dev/null | grep -q ' T pi_hooks_plugin_v1$'; then
        echo "error: $lib does not export pi_hooks_plugin_v1 (use PI_HOOKS_PLUGIN)" >&2
        exit 1
    fi
    echo "built $lib  (from ${sources[*]})"
    built=$((built + 1))
done
if [ "$built" -eq 0 ]; then
    echo "error: no plugins found under plugins/examples/*/" >&2
    exit 1
fi

"$CC" "${CFLAGS_STRICT[@]}" -fsyntax-only -I include tests/c/header_twice.c
echo "checked tests/c/header_twice.c (C11)"
"$CXX" "${CXXFLAGS_STRICT[@]}" -pedantic -fsyntax-only -I include tests/c/header_cpp.cpp
echo "checked tests/c/header_cpp.cpp (C++17)"
echo '#include "pi_hooks.h"' | "$CC" -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -I include -x c -
echo "checked include/pi_hooks.h alone (C99)"
echo '#include "pi_hooks.h"' | "$CXX" -std=c++11 -Wall -Wextra -Werror -pedantic -fsyntax-only -I include -x c++ -
echo "checked include/pi_hooks.h alone (C++11)"

# The example in the overview comment of pi_hooks.h, between its begin/end marker lines.
example="$OUT/tests/header_example.c"
sed -n '/^ \* -------- begin example/,/^ \* -------- end example/p' include/pi_hooks.h \
    | sed '1d;$d' | sed -e 's/^ \* \{0,1\}//' -e 's/^ \*$//' >"$example"
if [ ! -s "$example" ]; then
    echo "error: no example found in the overview comment of include/pi_hooks.h" >&2
    exit 1
fi
"$CC" "${CFLAGS_STRICT[@]}" -fsyntax-only -I include "$example"
echo "checked the example in include/pi_hooks.h ($example)"

# The C example in docs/writing-plugins.md (the first ```c block).
readme_example="$OUT/tests/readme_example.c"
awk '/^```c$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' docs/writing-plugins.md >"$readme_example"
if [ ! -s "$readme_example" ]; then
    echo "error: no \`\`\`c example found in docs/writing-plugins.md" >&2
    exit 1
fi
"$CC" "${CFLAGS_STRICT[@]}" -fsyntax-only -I include "$readme_example"
echo "checked the C example in docs/writing-plugins.md ($readme_example)"

"$CC" "${CFLAGS_STRICT[@]}" -I include -o "$OUT/tests/protected_paths_test" tests/c/protected_paths_test.c
echo "running $OUT/tests/protected_paths_test"
"$OUT/tests/protected_paths_test"
