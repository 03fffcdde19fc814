/* The floor under "50 plugins in a print run": a C program that only dlopens the libraries
 * named on its command line, either from their files ("file") or, as pi-hooks does on Linux,
 * from a sealed memfd copy of their bytes ("memfd"), and exits. See BENCHMARKS.md section 3.
 *
 *   cc -O2 -o /tmp/dlopen-floor scripts/dlopen-floor.c
 *   hyperfine -N "/tmp/dlopen-floor none" "/tmp/dlopen-floor file $LIBS" \
 *                "/tmp/dlopen-floor memfd $LIBS"      (LIBS: the 50 plugin files)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int open_copy(const char *path) {
    static char bytes[1 << 22];
    FILE *f = fopen(path, "rb");
    if (f == NULL) return -1;
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    int fd = memfd_create("dlopen-floor", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || write(fd, bytes, n) != (ssize_t)n) return -1;
    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    return fd;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "none") && strcmp(argv[1], "file") && strcmp(argv[1], "memfd"))) {
        fprintf(stderr, "usage: %s none|file|memfd LIBRARY...\n", argv[0]);
        return 2;
    }
    int memfd = strcmp(argv[1], "memfd") == 0;
    for (int i = 2; i < argc && strcmp(argv[1], "none") != 0; i++) {
        char name[64];
        const char *path = argv[i];
        if (memfd) {
            int fd = open_copy(path);
            if (fd < 0) { perror(path); return 1; }
            snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
            path = name;
        }
        void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) { fprintf(stderr, "%s\n", dlerror()); return 1; }
        if (dlsym(library, "pi_hooks_plugin_v1") == NULL) { fprintf(stderr, "%s: no entry\n", argv[i]); return 1; }
    }
    return 0;
}
