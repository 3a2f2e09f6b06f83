/*  exec_gpu - finding a node's NVIDIA GPUs (exec_gpu.h). */
#include "exec_gpu.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_source = "none";

const char *
exec_gpu_source(void)
{
    return s_source;
}

static int
s_fake(const char *list, int *ids, int max)
{
    int n = 0;
    if (strcmp(list, "none") == 0 || !*list)
        return 0;
    for (const char *p = list; *p && n < max;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0)
            break; /* garbage ends the list: what came before stands */
        ids[n++] = (int) v;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' )
            break;
    }
    return n;
}

int
exec_gpu_detect(int *ids, int max)
{
    int n = 0;
    const char *fake = getenv("LUX_FAKE_GPUS");
    if (fake) {
        s_source = "LUX_FAKE_GPUS";
        return s_fake(fake, ids, max);
    }
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && n < max)
            if (e->d_name[0] != '.')
                ids[n] = n, n++;
        closedir(d);
        if (n) {
            s_source = "/proc/driver/nvidia/gpus";
            return n;
        }
    }
    FILE *f = popen("nvidia-smi -L 2>/dev/null", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f) && n < max)
            if (strncmp(line, "GPU ", 4) == 0)
                ids[n] = n, n++;
        pclose(f);
        if (n) {
            s_source = "nvidia-smi -L";
            return n;
        }
    }
    s_source = "none";
    return 0;
}
