/* driver: the orchestration behind `tgc compile` and `tgc run`, so the CLI only parses and reports.
 *
 * compile -t c  schedules the graph, lowers each distinct kernel AST once (one KNames per compile,
 *               as tinygrad's kernel_cnt), and writes into DIR.tmp.PID next to DIR, renamed to DIR at
 *               the end: one translation unit per kernel (NAME.c: prelude + the kernel function, the
 *               kernel's only definition), schedule.json with names and sources, and the AOT bundle
 *               model.h/model.c (the schedule as straight-line C calling the kernels through
 *               prototypes; no tgc library at run time) plus Makefile.inc.
 * run -d cpu    fills input BUFFERs from .npy files, checks every BUFFER read before it is written
 *               has data, runs the schedule on the CPU runtime and gathers each sink source
 *               C-contiguously; outputs can be written as .npy and compared with an expect file. */
#ifndef TGC_DRIVER_H
#define TGC_DRIVER_H
#include <stdio.h>
#include "../io/graph.h"
#include "../schedule/schedule.h"

typedef struct DriverInput { int64_t row; const char *path; } DriverInput;   /* --input ROW=PATH */
typedef struct DriverOut { const DType *dtype; int ndim; int64_t shape[TG_MAX_DIMS]; void *data; size_t nbytes; } DriverOut;
typedef struct DriverRun {
  int nkernels; int noutputs; DriverOut *outs;
  int nrepeat; double ms_median, ms_min;  /* with repeat > 0: the timed reruns of the schedule */
  /* with profile: per schedule item, its median wall time over the reruns, its name (the kernel's,
   * "copy" or "view") and the bytes of the buffers it names */
  int nitems; double *item_ms; const char **item_names; size_t *item_bytes;
} DriverRun;
/* how `run` executes: threads for CPU kernels (1 serial; 0 all cores), and repeat > 0 reruns the
 * whole schedule that many times after the first run (whose outputs are the ones kept), timing each;
 * profile times each item of those reruns too (at least one rerun); beam > 0 picks each CPU kernel's
 * opts by a BEAM search of that width (rt_beam), reporting each finished search on log */
typedef struct DriverRunOpts { int threads; int repeat; bool profile; int beam; FILE *log; bool fast_sums; } DriverRunOpts;
void driver_run_options(DriverRunOpts o);

/* the schedule of g's sink with g's options (uctx->opt, next_unique past the graph's UNIQUEs) */
Schedule *driver_schedule(Graph *g);
/* s, with what Tensor.numpy() adds for a sink source the schedule leaves unrealized (tinygrad
 * 0.11.0 keeps some, e.g. a reduce of a realized buffer): a second schedule of CONTIGUOUS(source)
 * over the buffers the first one writes, its items after s's and its buffers read as those
 * outputs (sched_sink); s itself when every output is a buffer, a view of one or a constant.
 * run and compile run this; schedule and check write tinygrad's schedule alone. */
Schedule *driver_realize_outputs(Schedule *s);
/* replace the data of BUFFER rows from .npy files; TG_EINPUT when the row is not a BUFFER or the
 * file's dtype or element count differs */
void driver_set_inputs(Graph *g, int n, const DriverInput *in);
/* TG_EINPUT naming the row when a graph BUFFER without data is read before anything writes it */
void driver_check_inputs(const Graph *g, const Schedule *s);
/* run s on the CPU runtime and read every sink source; TG_EDEVICE on compiler failures */
DriverRun *driver_run_cpu(Graph *g, Schedule *s);
/* the same on device "cpu", "opencl" (OpenCL, e.g. PoCL; TG_EDEVICE "no OpenCL platform" when none)
 * or "cuda" (NVRTC + driver API; TG_EDEVICE "no CUDA device" when none) */
DriverRun *driver_run_device(Graph *g, Schedule *s, const char *device);
/* write DIR/out0.npy... (each atomically, DIR created when missing); TG_EINPUT when a path is one of the avoid paths */
void driver_write_outputs(const DriverRun *r, const char *dir, int navoid, const char *const *avoid);
/* true when n elements agree: ints/bools exactly, float rtol 1e-4/atol 1e-5, half/bfloat16 1e-2,
 * NaN equal to NaN; on false, why names the worst element */
bool driver_close(const DType *dt, const void *got, const void *want, size_t n, char *why, size_t wn);
/* the same rule with float tolerances given (|got - want| <= atol + rtol * |want|) */
bool driver_close_tol(const DType *dt, const void *got, const void *want, size_t n, double rtol, double atol, char *why, size_t wn);
/* compare every output with the expect file's outputs (count, dtype, size, values) */
bool driver_compare(const DriverRun *r, const Expect *x, char *why, size_t wn);
/* every output byte for byte the expect file's: tinygrad's own bits, not only close values (the C
 * backend adds and contracts as tinygrad's CPU kernels do; conformance's bits column) */
bool driver_same_bits(const DriverRun *r, const Expect *x);
/* `tgc compile -t c`: write the directory described above; returns the number of kernels */
int driver_compile_c(Graph *g, Schedule *s, const char *dir);
/* the bundle's kernels: 1 serial (the default), 0 OpenMP over the outer loop with OpenMP's thread
 * count at run time, N num_threads(N); with threads Makefile.inc compiles with -fopenmp */
void driver_compile_threads(int threads);
/* the bundle's float sums may be reassociated (RenderBackend.fast_sums; default false: tinygrad's order) */
void driver_compile_fast_sums(bool fast_sums);
/* compile -t c --beam N: each kernel's opts from a BEAM search of width N timed on this CPU with
 * the bundle's threads (rt_beam), each finished search reported on log (may be NULL) */
void driver_compile_beam(int beam, FILE *log);
/* `tgc compile -t opencl|cuda`: DIR gets NAME.cl / NAME.cu per kernel, schedule.json and host.c (a
 * standalone program running the schedule with the OpenCL API / CUDA driver API + NVRTC, inputs
 * from DIR/inputN.bin, outputs to DIR/outN.bin); returns the number of kernels */
int driver_compile_gpu(Graph *g, Schedule *s, const char *dir, const char *target);

#endif
