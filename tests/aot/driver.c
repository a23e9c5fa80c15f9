/* Test driver for libraries written by `hloc compile --name m` (tests/test_aot.py).
 * Built against the generated header (-include m.h) and either linked with the library or,
 * with -DUSE_DLOPEN, loading it with dlopen(RTLD_NOW) at run time: no Python anywhere.
 *   driver [LIB.so] IN_DIR OUT_DIR THREADS POOL CONCURRENT
 * reads IN_DIR/in<i>.bin (exactly m_arg_bytes[i] bytes each), runs the model and writes
 * OUT_DIR/out<j>.bin. POOL=1 passes a caller thread pool (pthreads started here) through
 * m_config; CONCURRENT=1 also runs the model in two threads at once on private results
 * and scratch, and fails unless both match the first run byte for byte. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef USE_DLOPEN
#include <dlfcn.h>
#endif

typedef int (*run_with_fn)(void* const*, void* const*, void*, const m_config*);
static run_with_fn run_with;
static long pool_calls;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct job { m_task_fn task; void* arg; int64_t i; };
static void* pool_thread(void* p) { struct job* j = p; j->task(j->arg, j->i); return NULL; }
static void pool(void* ctx, int64_t n, m_task_fn task, void* arg) {
  (void)ctx;
  pthread_t t[64]; struct job jobs[64];
  pthread_mutex_lock(&lock); pool_calls++; pthread_mutex_unlock(&lock);
  for (int64_t i = 0; i < n; ++i) { jobs[i] = (struct job){task, arg, i}; pthread_create(&t[i], NULL, pool_thread, &jobs[i]); }
  for (int64_t i = 0; i < n; ++i) pthread_join(t[i], NULL);
}

static void* alloc(int64_t n) { return n ? aligned_alloc(64, (n + 63) / 64 * 64) : NULL; }

struct inst { void* args[m_NUM_ARGS + 1]; void* res[m_NUM_RESULTS + 1]; void* scratch; m_config cfg; int rc; };
static void* run_inst(void* p) { struct inst* s = p; s->rc = run_with(s->args, s->res, s->scratch, &s->cfg); return NULL; }
static void new_outputs(struct inst* s) {
  for (int j = 0; j < m_NUM_RESULTS; ++j) s->res[j] = alloc(m_result_bytes[j]);
  s->scratch = alloc(m_SCRATCH_BYTES);
}

int main(int argc, char** argv) {
  int a = 1;
#ifdef USE_DLOPEN
  void* h = dlopen(argv[a++], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 10; }
  run_with = (run_with_fn)dlsym(h, "m_run_with");
  if (!run_with) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 10; }
#else
  run_with = m_run_with;
#endif
  if (argc - a != 5) { fprintf(stderr, "usage: driver [LIB] IN OUT THREADS POOL CONCURRENT\n"); return 2; }
  const char *in = argv[a], *out = argv[a + 1];
  struct inst s0 = {0};
  s0.cfg.threads = atoi(argv[a + 2]);
  if (atoi(argv[a + 3])) s0.cfg.parallel_for = pool;
  int concurrent = atoi(argv[a + 4]);
  char path[4096];
  for (int i = 0; i < m_NUM_ARGS; ++i) {
    s0.args[i] = alloc(m_arg_bytes[i]);
    snprintf(path, sizeof path, "%s/in%d.bin", in, i);
    FILE* f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return 3; }
    if (m_arg_bytes[i] && fread(s0.args[i], 1, m_arg_bytes[i], f) != (size_t)m_arg_bytes[i]) { fprintf(stderr, "short %s\n", path); return 3; }
    fclose(f);
  }
  new_outputs(&s0);
  run_inst(&s0);
  if (s0.rc != m_OK) { fprintf(stderr, "m_run_with returned %d\n", s0.rc); return 4; }
  if (concurrent) {
    struct inst s[2]; pthread_t t[2];
    for (int k = 0; k < 2; ++k) { s[k] = s0; new_outputs(&s[k]); pthread_create(&t[k], NULL, run_inst, &s[k]); }
    for (int k = 0; k < 2; ++k) {
      pthread_join(t[k], NULL);
      if (s[k].rc != m_OK) { fprintf(stderr, "concurrent run returned %d\n", s[k].rc); return 5; }
      for (int j = 0; j < m_NUM_RESULTS; ++j)
        if (m_result_bytes[j] && memcmp(s[k].res[j], s0.res[j], m_result_bytes[j])) { fprintf(stderr, "concurrent result %d differs\n", j); return 6; }
    }
  }
  for (int j = 0; j < m_NUM_RESULTS; ++j) {
    snprintf(path, sizeof path, "%s/out%d.bin", out, j);
    FILE* f = fopen(path, "wb");
    if (!f) return 7;
    if (m_result_bytes[j]) fwrite(s0.res[j], 1, m_result_bytes[j], f);
    fclose(f);
  }
  fprintf(stderr, "ok: pool calls %ld\n", pool_calls);
  return 0;
}
