/*  lux_replay_kill - how `lux replay` re-enacts a recorded actor restart
    on its own embedded cluster: the process of the re-created actor is
    killed with SIGKILL after the call the recorded process died after, and
    the replay goes on once the actor has restarted (see lux_replay.c). */
#ifndef LUX_REPLAY_KILL_H_INCLUDED
#define LUX_REPLAY_KILL_H_INCLUDED

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* On the running cluster in dir (the replay's, embedded in this process):
   find the process that finished the actor call `call` (its task_finished
   event's worker), check that it is a worker child of this process, kill
   it with SIGKILL, and wait until the log holds one more actor_restarted
   event of `actor` than before the kill. Waits up to timeout_ms in all.
   0 with *killed set; else an error code with the reason in why (the
   call not finished, the process not ours, no restart logged in time). */
int lux_replay_kill(const char *dir, const uint8_t call[16], const uint8_t actor[16],
                    int timeout_ms, pid_t *killed, char *why, size_t n);

#endif
