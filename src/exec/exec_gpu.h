/*  exec_gpu - the NVIDIA GPUs a node has, for its GPU resource.

    A node declares GPU=n, n the GPUs found here: the entries of
    /proc/driver/nvidia/gpus/ (the driver's, one per device), else the
    "GPU i: ..." lines of `nvidia-smi -L`, else none (a machine without
    GPUs is fine). LUX_FAKE_GPUS replaces the detection, for tests on
    machines without GPUs: a list of device indexes ("0,1,3"), or "none".
*/
#ifndef EXEC_GPU_H_INCLUDED
#define EXEC_GPU_H_INCLUDED

#define EXEC_GPU_MAX 64

/* The GPUs' indexes into ids[max] (0..n-1 when detected, the list when
   faked); their count, 0 when there are none. */
int exec_gpu_detect(int *ids, int max);

/* Where the count came from: "LUX_FAKE_GPUS", "/proc/driver/nvidia/gpus",
   "nvidia-smi -L" or "none" (after exec_gpu_detect). */
const char *exec_gpu_source(void);

#endif
