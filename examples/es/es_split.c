/*  es_split - how many rollouts each of an iteration's tasks gets; see es_split.h. */
#include "es_split.h"

#include <stdlib.h>
#include <string.h>

/* Slot k's rollouts in an even split. */
static size_t
s_even_count(const es_split_t *s, int k)
{
    return s->total * (size_t)(k + 1) / (size_t)s->slots - s->total * (size_t)k / (size_t)s->slots;
}

static void
s_even(es_split_t *s)
{
    for (int k = 0; k < s->slots; k++)
        s->count[k] = s_even_count(s, k);
}

int
es_split_init(es_split_t *s, int slots, size_t total, bool balance)
{
    memset(s, 0, sizeof *s);
    if (slots < 1)
        slots = 1;
    if ((size_t)slots > total && total > 0)
        slots = (int)total;
    s->slots = slots;
    s->total = total;
    s->balance = balance;
    s->count = calloc((size_t)slots, sizeof *s->count);
    s->per = calloc((size_t)slots, sizeof *s->per);
    s->want = calloc((size_t)slots, sizeof *s->want);
    if (!s->count || !s->per || !s->want) {
        es_split_free(s);
        return -1;
    }
    s_even(s);
    return 0;
}

void
es_split_free(es_split_t *s)
{
    free(s->count);
    free(s->per);
    free(s->want);
    s->count = NULL;
    s->per = NULL;
    s->want = NULL;
}

void
es_split_update(es_split_t *s, const double *seconds)
{
    int n = s->slots;
    if (!s->balance || n < 2)
        return;
    double lo = 0.0, hi = 0.0;
    for (int k = 0; k < n; k++) {
        if (s->count[k] == 0 || !(seconds[k] > 0.0))
            continue;
        double per = seconds[k] / (double)s->count[k];
        s->per[k] = s->per[k] > 0.0 ? ES_SPLIT_ALPHA * per + (1.0 - ES_SPLIT_ALPHA) * s->per[k]
                                    : per;
    }
    for (int k = 0; k < n; k++) {
        if (!(s->per[k] > 0.0)) { /* a slot not timed yet: stay even */
            s_even(s);
            return;
        }
        lo = k == 0 || s->per[k] < lo ? s->per[k] : lo;
        hi = k == 0 || s->per[k] > hi ? s->per[k] : hi;
    }
    if (hi <= lo * (1.0 + ES_SPLIT_MIN_GAP)) {
        s_even(s);
        return;
    }
    /* shares in proportion to speed (1 / per), each within [0.5, 1.5] of
       an even share, then whole rollouts by largest remainder */
    double sum = 0.0, even = (double)s->total / n, *want = s->want;
    for (int k = 0; k < n; k++)
        sum += 1.0 / s->per[k];
    size_t given = 0;
    for (int k = 0; k < n; k++) {
        want[k] = (double)s->total / s->per[k] / sum;
        if (want[k] < 0.5 * even)
            want[k] = 0.5 * even;
        if (want[k] > 1.5 * even)
            want[k] = 1.5 * even;
        s->count[k] = (size_t)want[k];
        if (s->count[k] < 1)
            s->count[k] = 1;
        given += s->count[k];
    }
    /* the clamps and the floor leave the sum off total: add to (or take
       from) the slots whose wanted share is furthest above (below) what
       they have */
    while (given != s->total) {
        int best = -1;
        double gap = 0.0;
        for (int k = 0; k < n; k++) {
            double g = want[k] - (double)s->count[k];
            if (given > s->total)
                g = -g;
            if (given > s->total && s->count[k] <= 1)
                continue;
            if (best < 0 || g > gap) {
                best = k;
                gap = g;
            }
        }
        if (best < 0)
            break;
        if (given < s->total) {
            s->count[best]++;
            given++;
        } else {
            s->count[best]--;
            given--;
        }
    }
    for (int k = 0; k < n; k++)
        if (s->count[k] != s_even_count(s, k)) {
            s->uneven++;
            break;
        }
}
