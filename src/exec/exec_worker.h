/*  exec_worker - a worker process's loop: take batches of tasks from the
    node manager, run each (loading its module by hash from the cluster's
    directory), report results.

    A task's function gets its arguments in place (values in the message,
    objects in the shared-memory store), sets its returns with lux_set, and
    may call, put and get like a driver: its nested tasks are children of
    the task, so their IDs are the same on a retry. When it blocks in
    lux_get, the worker gives the node back the tasks of its batch it has
    not started, and tells it that its CPU is free.

    A function that crashes takes the worker with it: the node manager
    retries the task on a new worker.
*/
#ifndef EXEC_WORKER_H_INCLUDED
#define EXEC_WORKER_H_INCLUDED

/* Run until SIGTERM or the node manager goes away. Returns the exit
   status. */
int exec_worker_main(const char *dir, const char *endpoint);

#endif
