/*  util_fp - content fingerprints (see util_fp.h). */
#include "util_fp.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void util_fp_avx2(uint64_t out[2], const void *p, size_t n);
void util_fp_base(uint64_t out[2], const void *p, size_t n);
void util_fp_avx2_add(void *state, const void *p, size_t n);
void util_fp_base_add(void *state, const void *p, size_t n);
void util_fp_avx2_end(const void *state, uint64_t out[2]);
void util_fp_base_end(const void *state, uint64_t out[2]);
void *util_fp_state_new(void);
void util_fp_state_free(void *state);

typedef void (*s_fn_t)(uint64_t out[2], const void *p, size_t n);

static s_fn_t
s_pick(void)
{
    static s_fn_t fn;
    if (!fn) {
        __builtin_cpu_init();
        fn = __builtin_cpu_supports("avx2") ? util_fp_avx2 : util_fp_base;
    }
    return fn;
}

static bool
s_avx2(void)
{
    return s_pick() == util_fp_avx2;
}

static void
s_le(uint8_t out[16], const uint64_t h[2])
{
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t) (h[0] >> (8 * i));
        out[8 + i] = (uint8_t) (h[1] >> (8 * i));
    }
}

void
util_fp(uint8_t out[16], const void *p, size_t n)
{
    uint64_t h[2];
    s_pick()(h, p, n);
    s_le(out, h);
}

typedef struct {
    const void *p;
    size_t n;
    uint64_t h[2];
} s_job_t;

static void *
s_hash(void *arg)
{
    s_job_t *j = arg;
    s_pick()(j->h, j->p, j->n);
    return NULL;
}

#define S_PARALLEL ((size_t) 16 << 20) /* below this a thread costs more than it saves */

void
util_fp_copy(uint8_t out[16], void *dst, const void *src, size_t n)
{
    s_job_t j = {src, n, {0, 0}};
    pthread_t t;
    if (n < S_PARALLEL || pthread_create(&t, NULL, s_hash, &j) != 0) {
        memcpy(dst, src, n);
        s_hash(&j);
    } else {
        memcpy(dst, src, n);
        pthread_join(t, NULL);
    }
    s_le(out, j.h);
}

struct util_fp_stream {
    void *state; /* XXH3_state_t, util_fp_simd.c's */
    bool avx2;
};

util_fp_stream_t *
util_fp_stream_new(void)
{
    util_fp_stream_t *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    if (!(s->state = util_fp_state_new())) {
        free(s);
        return NULL;
    }
    s->avx2 = s_avx2();
    return s;
}

void
util_fp_stream_add(util_fp_stream_t *self, const void *p, size_t n)
{
    if (self->avx2)
        util_fp_avx2_add(self->state, p, n);
    else
        util_fp_base_add(self->state, p, n);
}

void
util_fp_stream_end(const util_fp_stream_t *self, uint8_t out[16])
{
    uint64_t h[2];
    if (self->avx2)
        util_fp_avx2_end(self->state, h);
    else
        util_fp_base_end(self->state, h);
    s_le(out, h);
}

void
util_fp_stream_free(util_fp_stream_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    util_fp_state_free((*self_p)->state);
    free(*self_p);
    *self_p = NULL;
}
