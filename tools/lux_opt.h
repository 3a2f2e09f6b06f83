/*  lux_opt - the command line of every lux command, parsed one way.

    getopt_long underneath, with the conventions of every command (lux(1),
    EXIT STATUS):
      - -h and --help print the usage (and the command's help) to stdout;
        the command exits 0;
      - a usage error (an unknown option, a missing or malformed value, a
        missing or extra argument) prints "lux CMD: what is wrong" and the
        usage to stderr; the command exits 2;
      - a runtime error prints "lux CMD: what failed and why" (lux_fail);
        the command exits 1.
    Options may come before or after the arguments, `--` ends them; a
    command whose trailing arguments belong to someone else (lux run: the
    module's) stops at the first argument that is not an option.

    Use:
        static const struct option opts[] = {
            {"dir", required_argument, 0, 'd'}, {"json", no_argument, 0, 'j'}, {0}};
        lux_opt_t p = {.cmd = "status", .usage = s_usage, .opts = opts};
        int o;
        while ((o = lux_opt_next(&p, argc, argv)) != -1)
            switch (o) {
            case 'd': dir = optarg; break;
            case 'j': json = true; break;
            default: return p.status;   (LUX_OPT_EXIT: help or a usage error)
            }
        ... argv[optind .. argc-1] are the arguments ...
*/
#ifndef LUX_OPT_H_INCLUDED
#define LUX_OPT_H_INCLUDED

#include <getopt.h>
#include <stdbool.h>

#define LUX_OPT_EXIT (-2) /* lux_opt_next: --help or a usage error was printed */

/* An option whose value is only kept: lux_opt_next stores optarg in *to
   and goes on to the next option (a table ended by {0}). */
typedef struct {
    int val;
    const char **to;
} lux_opt_str_t;

typedef struct {
    const char *cmd;           /* the command's name, "status" */
    const char *usage;         /* its synopsis, "lux status --dir DIR [--json]" */
    const char *help;          /* more text for --help, or NULL */
    const struct option *opts; /* long options, ended by {0}; --help is added */
    const char *shorts;        /* short options in getopt's syntax ("o:"), or NULL */
    bool in_order;             /* stop at the first argument that is not an option */
    const lux_opt_str_t *strs; /* options stored, not returned (or NULL) */
    int status;                /* after LUX_OPT_EXIT (or a false lux_opt_*): exit status */
    bool started_;             /* private */
} lux_opt_t;

/* The next option's val (optarg holds its value) that p->strs does not
   store, -1 after the last one
   (optind is then the first argument), or LUX_OPT_EXIT with p->status set
   once --help or a usage error has been printed. */
int lux_opt_next(lux_opt_t *p, int argc, char **argv);

/* Print a usage error ("lux CMD: ...", then the usage) to stderr; returns
   2 and sets p->status to 2. */
int lux_opt_usage(lux_opt_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* optarg as a number from 1 to max (from 0 with allow_zero); false after
   a usage error naming the option (p->status is 2). */
bool lux_opt_uint(lux_opt_t *p, const char *name, unsigned long max, bool allow_zero,
                  unsigned long *out);

/* optarg as a node's resources, "CPU=N,NAME=N" (at most 16 kinds, each a
   name of 1 to 30 characters and an amount >= 0): checked here, before a
   command makes a directory or starts a cluster whose node manager would
   refuse it; false after a usage error naming the bad item. */
bool lux_opt_resources(lux_opt_t *p, const char *name);

/* Check the count of arguments left (argv[optind..]): from min to max
   (max < 0: no bound); false after a usage error that says which is
   missing (what: "MODULE.so") or which is one too many. */
bool lux_opt_args(lux_opt_t *p, int argc, char **argv, int min, int max, const char *what);

#endif
