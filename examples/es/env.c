/*  env - the list of environments and lookup by name. */
#include "env.h"

#include <strings.h>

const es_env_t *const es_envs[] = {&es_env_cartpole, &es_env_pendulum, NULL};

const es_env_t *
es_env_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; es_envs[i]; i++)
        if (strcasecmp(name, es_envs[i]->name) == 0 || strcasecmp(name, es_envs[i]->gym_id) == 0)
            return es_envs[i];
    return NULL;
}
