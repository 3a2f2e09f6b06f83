/*  lux - the command: start, stop and inspect clusters, query the log,
    run jobs and benchmarks. See lux(1). */
#include "lux.h"

#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("lux %d.%d.%d\n", LUX_VERSION_MAJOR, LUX_VERSION_MINOR, LUX_VERSION_PATCH);
        return 0;
    }
    fprintf(stderr, "usage: lux COMMAND [ARGS]\n");
    return 2;
}
