#!/bin/sh
# spill-copy-cost.sh - what the heap copy of one spill costs (issue 24).
#
# A put evicted from the store is copied to the node's heap before the
# writer thread compresses and writes it (exec_node_obj.c s_spill:
# malloc(size), then memcpy from the arena), so that the arena's block is
# free at once. This does the same outside the node, on a file in
# /dev/shm mapped MAP_SHARED and written first (the arena's pages are
# there already), for each size given in MiB (default 8 and 64), RUNS
# times each (default 5): the copy's time (the malloc and memcpy, fresh
# heap pages faulted in by the copy, as in the node) and the resident
# memory it adds (VmRSS before the malloc and after the copy; the shared
# file's pages were resident before), and the same copy made again into
# the heap pages already faulted in (the copy alone). One line per run,
# then the median of each size. Usage: tools/spill-copy-cost.sh [MiB ...]
set -eu
runs=${RUNS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spill-copy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/c.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long
rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

int
main(int argc, char **argv)
{
    size_t n = (size_t) atol(argv[1]) << 20;
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/spill-copy-%d", (int) getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, (off_t) n) != 0)
        return perror(path), 1;
    unlink(path);
    unsigned char *arena = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (arena == MAP_FAILED)
        return perror("mmap"), 1;
    for (size_t i = 0; i < n; i++) /* the object, written by its task */
        arena[i] = (unsigned char) (i * 131 + (i >> 12));
    long before = rss_kb();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned char *buf = malloc(n);
    if (!buf)
        return perror("malloc"), 1;
    memcpy(buf, arena, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long after = rss_kb();
    double ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
    /* the same copy again, into pages faulted in already: what is left
       is the copy itself */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memcpy(buf, arena, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double warm = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("%s MiB: copy %.2f ms, %.2f GB/s, RSS +%.1f MiB (again into the same pages: %.2f ms)\n",
           argv[1], ms, (double) n / ms / 1e6, (double) (after - before) / 1024.0, warm);
    if (buf[n / 2] != arena[n / 2])
        return 1;
    free(buf);
    munmap(arena, n);
    close(fd);
    return 0;
}
EOF
${CC:-cc} -O2 -o "$tmp/c" "$tmp/c.c"
[ $# -gt 0 ] || set -- 8 64
for mb in "$@"; do
    i=0
    while [ "$i" -lt "$runs" ]; do
        "$tmp/c" "$mb"
        i=$((i + 1))
    done | tee "$tmp/out"
    sort -t' ' -k4 -n "$tmp/out" | sed -n "$(( (runs + 1) / 2 ))p" | sed 's/^/median: /'
done
