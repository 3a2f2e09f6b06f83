/*  exec_module - loading modules and their function tables (see
    exec_module.h).

    Modules are loaded once per process and never unloaded: tasks may hold
    pointers into them, and a job's modules live as long as its processes.
    The table of loaded modules is small and guarded by a mutex (clients of
    several threads may call lux_call at once); lookups of a function are a
    linear scan of its module's table, which holds a few dozen entries.
*/
#include "exec_module.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_MODULES 64
#define S_MAX_FNS 512

struct exec_module_t {
    uint8_t hash[16];
    char path[PATH_MAX];
    void *handle;       /* dlopen handle; NULL for the built-in module */
    exec_fn_t fns[S_MAX_FNS];
    int nfns;
    lux_main_t main;
    lux_configure_t configure; /* LUX_CONFIGURE, or NULL */
};

static exec_module_t *s_modules[S_MAX_MODULES];
static int s_nmodules;
static exec_module_t s_builtin;     /* functions compiled into the program */
static bool s_builtin_hashed;
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static exec_module_t *s_loading;    /* the module whose constructors run now */

/* A new entry of the loading module named name; NULL (logged) when full,
   too long or taken. */
static exec_fn_t *
s_entry(const char *name)
{
    /* constructors run in the thread that dlopens, which holds s_lock;
       built-in ones run before main, alone */
    exec_module_t *m = s_loading ? s_loading : &s_builtin;
    if (m->nfns >= S_MAX_FNS || strlen(name) >= sizeof m->fns[0].name) {
        log_error("module: cannot register '%s' (too many, or name too long)", name);
        return NULL;
    }
    for (int i = 0; i < m->nfns; i++)
        if (strcmp(m->fns[i].name, name) == 0) {
            log_error("module: '%s' registered twice", name);
            return NULL;
        }
    exec_fn_t *f = &m->fns[m->nfns++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

void
lux_register_function(const char *name, lux_fn_t fn, int nargs, int nret)
{
    if (strchr(name, '.')) {
        log_error("module: function name '%s' has a '.' (kept for methods)", name);
        return;
    }
    exec_fn_t *f = s_entry(name);
    if (!f)
        return;
    f->kind = EXEC_FN_TASK;
    f->fn = fn;
    f->nargs = nargs;
    f->nret = nret;
}

void
lux_register_class(const char *name, int nargs, lux_actor_new_t create, lux_actor_free_t destroy,
                   lux_actor_save_t save, lux_actor_load_t load)
{
    if (!create || strchr(name, '.')) {
        log_error("module: class '%s' needs a create function and a name without '.'", name);
        return;
    }
    exec_fn_t *f = s_entry(name);
    if (!f)
        return;
    f->kind = EXEC_FN_CLASS;
    f->create = create;
    f->destroy = destroy;
    f->save = save;
    f->load = load;
    f->nargs = nargs;
}

void
lux_register_method(const char *cls, const char *name, lux_method_t fn, int nargs, int nret)
{
    char full[128];
    snprintf(full, sizeof full, "%s.%s", cls, name);
    exec_fn_t *f = s_entry(full);
    if (!f)
        return;
    f->kind = EXEC_FN_METHOD;
    f->method = fn;
    f->nargs = nargs;
    f->nret = nret;
}

void
lux_register_main(lux_main_t fn)
{
    exec_module_t *m = s_loading ? s_loading : &s_builtin;
    m->main = fn;
}

void
lux_register_configure(lux_configure_t fn)
{
    exec_module_t *m = s_loading ? s_loading : &s_builtin;
    m->configure = fn;
}

int
exec_module_read(const char *path, uint8_t **bytes, size_t *n, uint8_t hash[16])
{
    char *b = util_read_file(path, n);
    if (!b)
        return util_err_ctx(util_exists(path) ? LUX_EIO : LUX_ENOTFOUND, "module %s", path);
    util_blake(hash, 16, b, *n);
    *bytes = (uint8_t *) b;
    return 0;
}

exec_module_t *
exec_module_find(const uint8_t hash[16])
{
    exec_module_t *m = NULL;
    pthread_mutex_lock(&s_lock);
    for (int i = 0; i < s_nmodules && !m; i++)
        if (memcmp(s_modules[i]->hash, hash, 16) == 0)
            m = s_modules[i];
    pthread_mutex_unlock(&s_lock);
    if (!m && s_builtin_hashed && memcmp(s_builtin.hash, hash, 16) == 0)
        m = &s_builtin;
    return m;
}

exec_module_t *
exec_module_builtin(void)
{
    pthread_mutex_lock(&s_lock);
    if (!s_builtin_hashed) {
        char exe[PATH_MAX];
        uint8_t *bytes;
        size_t n;
        if (util_self_exe(exe, sizeof exe) == 0 &&
            exec_module_read(exe, &bytes, &n, s_builtin.hash) == 0) {
            snprintf(s_builtin.path, sizeof s_builtin.path, "%s", exe);
            free(bytes);
        }
        s_builtin_hashed = true;
    }
    pthread_mutex_unlock(&s_lock);
    return &s_builtin;
}

exec_module_t *
exec_module_load(const char *path, const uint8_t hash[16])
{
    exec_module_t *m = exec_module_find(hash);
    if (m)
        return m;
    pthread_mutex_lock(&s_lock);
    if (s_nmodules >= S_MAX_MODULES) {
        pthread_mutex_unlock(&s_lock);
        util_err(LUX_EFULL, "module %s: at most %d modules per process", path, S_MAX_MODULES);
        return NULL;
    }
    m = calloc(1, sizeof *m);
    if (!m) {
        pthread_mutex_unlock(&s_lock);
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    /* a module is its bytes: a file changed since it was stored under its
       hash (a node's cache of DIR/modules) is refused, not run */
    uint8_t *bytes = NULL, got[16];
    size_t n = 0;
    int rc = exec_module_read(path, &bytes, &n, got);
    if (rc || memcmp(got, hash, 16) != 0) {
        char hex[33];
        util_hex(hex, hash, 16);
        char note[PATH_MAX + 8], first[UTIL_ERRMSG_MAX];
        size_t len = strlen(path);
        char *why = NULL;
        snprintf(first, sizeof first, "%s", lux_errmsg());
        if (rc && len > 3 && strcmp(path + len - 3, ".so") == 0 &&
            snprintf(note, sizeof note, "%.*s.why", (int) (len - 3), path) < (int) sizeof note &&
            util_exists(note))
            why = util_read_file(note, NULL); /* a node that could not fetch it said why */
        if (rc && why)
            util_err(rc, "module %s is not on this node: %s", hex, why);
        else if (rc) {
            util_err(rc, "%s", first); /* the read's own message, as it was */
            util_err_ctx(rc, "module %s", hex);
        }
        else
            util_err(LUX_EINVAL, "module %s: the bytes of %s do not match its hash (changed or "
                     "damaged since they were stored): refused", hex, path);
        free(why);
        free(bytes);
        free(m);
        pthread_mutex_unlock(&s_lock);
        return NULL;
    }
    free(bytes);
    memcpy(m->hash, hash, 16);
    snprintf(m->path, sizeof m->path, "%s", path);
    s_loading = m;
    dlerror();
    m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    s_loading = NULL;
    if (!m->handle) {
        const char *why = dlerror();
        util_err(util_exists(path) ? LUX_EINVAL : LUX_ENOTFOUND, "module %s: %s", path,
                 why ? why : "cannot be loaded");
        free(m);
        pthread_mutex_unlock(&s_lock);
        return NULL;
    }
    if (m->nfns == 0 && !m->main) {
        /* dlopen of a file already loaded under another name runs no
           constructors: refuse rather than guess */
        util_err(LUX_EINVAL, "module %s registers no functions (is it built with LUX_FUNCTION, "
                 "and not loaded already under another path?)", path);
        dlclose(m->handle);
        free(m);
        pthread_mutex_unlock(&s_lock);
        return NULL;
    }
    s_modules[s_nmodules++] = m;
    pthread_mutex_unlock(&s_lock);
    return m;
}

int
exec_module_store(const char *dir, const uint8_t hash[16], const uint8_t *bytes, size_t n,
                  char *path, size_t pathlen)
{
    char d[PATH_MAX], hex[33];
    int rc;
    util_hex(hex, hash, 16);
    snprintf(d, sizeof d, "%s/modules", dir);
    if ((rc = util_private_dir(d)))
        return rc;
    snprintf(path, pathlen, "%s/%s.so", d, hex);
    uint8_t *had = NULL, got[16];
    size_t len = 0;
    if (util_exists(path) && exec_module_read(path, &had, &len, got) == 0) {
        free(had);
        if (memcmp(got, hash, 16) == 0)
            return 0;
        log_warn("module %s: %s does not match its hash (changed or damaged): written again "
                 "from the module's own bytes", hex, path);
    }
    return util_write_file(path, bytes, n, 0700); /* a new file, renamed over the old */
}

const exec_fn_t *
exec_module_fn(exec_module_t *m, const char *name, size_t len)
{
    for (int i = 0; i < m->nfns; i++)
        if (strncmp(m->fns[i].name, name, len) == 0 && m->fns[i].name[len] == '\0')
            return &m->fns[i];
    return NULL;
}

lux_main_t
exec_module_main(exec_module_t *m)
{
    return m->main;
}

lux_configure_t
exec_module_configure(exec_module_t *m)
{
    return m->configure;
}

const uint8_t *
exec_module_hash(exec_module_t *m)
{
    return m->hash;
}

int
exec_module_count(exec_module_t *m)
{
    return m->nfns;
}
