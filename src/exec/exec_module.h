/*  exec_module - modules: the shared objects that hold a job's remote
    functions and actor classes.

    A module is identified by the BLAKE2b-128 hash of its bytes. The driver
    sends the bytes to its node manager, which records them in the log
    (module_registered) and keeps them as DIR/modules/HASH.so; workers load
    that file. So every task's code is on record, and two runs of the same
    module run the same code.

    Registration: loading a module runs its constructors, which call
    lux_register_function (LUX_FUNCTION) while this file marks which module
    is loading. Functions compiled into the running program itself (no
    dlopen) land in the built-in module, whose bytes are the program's own
    executable.
*/
#ifndef EXEC_MODULE_H_INCLUDED
#define EXEC_MODULE_H_INCLUDED

#include "../lux.h"

#include <stddef.h>
#include <stdint.h>

/* What a module entry is. */
enum { EXEC_FN_TASK = 0, EXEC_FN_METHOD, EXEC_FN_CLASS };

typedef struct {
    char name[64]; /* function name; "Class.method" for a method; "Class" for a class */
    int kind;      /* EXEC_FN_* */
    lux_fn_t fn;
    lux_method_t method;
    lux_actor_new_t create;
    lux_actor_free_t destroy;
    lux_actor_save_t save;
    lux_actor_load_t load;
    int nargs;     /* -1: any (for a class: its constructor's) */
    int nret;
} exec_fn_t;

typedef struct exec_module_t exec_module_t;

/* Read a file's bytes and hash. 0 or LUX_ENOTFOUND / LUX_EIO. */
int exec_module_read(const char *path, uint8_t **bytes, size_t *n, uint8_t hash[16]);

/* Load the module at path (dlopen), whose hash is hash. NULL with a
   message when the file is missing or not a loadable module. Loading the
   same hash again returns the same module. */
exec_module_t *exec_module_load(const char *path, const uint8_t hash[16]);

/* The module of functions compiled into this program (always there). */
exec_module_t *exec_module_builtin(void);

/* Store bytes as DIR/modules/HEX.so if that file is not there yet; the
   path into path[n]. 0 or LUX_EIO. */
int exec_module_store(const char *dir, const uint8_t hash[16], const uint8_t *bytes, size_t n,
                      char *path, size_t pathlen);

/* Look up a function, "Class.method" or "Class" (check ->kind); NULL when
   the module has none of that name. */
const exec_fn_t *exec_module_fn(exec_module_t *m, const char *name, size_t len);
/* The module's LUX_MAIN, or NULL. */
lux_main_t exec_module_main(exec_module_t *m);
/* The module's LUX_CONFIGURE, or NULL. */
lux_configure_t exec_module_configure(exec_module_t *m);
const uint8_t *exec_module_hash(exec_module_t *m);
/* How many functions it registered. */
int exec_module_count(exec_module_t *m);

/* Find a loaded module by hash (NULL when not loaded in this process). */
exec_module_t *exec_module_find(const uint8_t hash[16]);

#endif
