/* The life of a library's own worker pool (tests/test_aot.py), no Python in this process.
 *   pool_driver LIB.so IN_DIR THREADS CLOSE
 * Built with -include m.h. dlopens LIB, runs it once (its pool's workers start: prints
 * "workers N", the threads beyond this one), then from 4 threads at once (one has the
 * pool, the others start their own threads), then in a forked child (which must start
 * workers of its own, not wait on the parent's) and a grandchild, then here again: every
 * result must equal the first byte for byte. With CLOSE=1 it dlcloses the library, after
 * which only this thread may be left (the library's destructor joined its workers), and
 * exits; with CLOSE=0 it exits with the workers alive (the destructor runs at exit). */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*run_with_fn)(void* const*, void* const*, void*, const m_config*);
static run_with_fn run_with;
static void* args[m_NUM_ARGS + 1];
static void* first[m_NUM_RESULTS + 1];
static m_config cfg;

static void* alloc(int64_t n) { return n ? aligned_alloc(64, (n + 63) / 64 * 64) : NULL; }

static int threads_now(void) {
  DIR* d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent* e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Runs the model on fresh results; 0 when they equal `first` (or become it). */
static int run_once(int keep) {
  void* res[m_NUM_RESULTS + 1];
  for (int j = 0; j < m_NUM_RESULTS; ++j) res[j] = alloc(m_result_bytes[j]);
  void* scratch = alloc(m_SCRATCH_BYTES);
  int rc = run_with(args, res, scratch, &cfg);
  for (int j = 0; j < m_NUM_RESULTS && rc == m_OK; ++j) {
    if (keep) first[j] = res[j];
    else if (m_result_bytes[j] && memcmp(res[j], first[j], m_result_bytes[j])) rc = -1;
  }
  if (!keep) for (int j = 0; j < m_NUM_RESULTS; ++j) free(res[j]);
  free(scratch);
  return rc;
}

static void* caller(void* p) {
  for (int i = 0; i < 10; ++i) if (run_once(0)) { *(int*)p = 1; break; }
  return NULL;
}

static int forked(int depth) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60);                       /* waiting on the parent's workers would hang here */
    int bad = run_once(0) || run_once(0);
    if (!bad && depth > 1) bad = forked(depth - 1);
    exit(bad ? 9 : 0);               /* exit: the destructor stops this child's workers */
  }
  int status;
  waitpid(pid, &status, 0);
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char** argv) {
  if (argc != 5) { fprintf(stderr, "usage: pool_driver LIB IN THREADS CLOSE\n"); return 2; }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 10; }
  run_with = (run_with_fn)dlsym(h, "m_run_with");
  if (!run_with) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 10; }
  cfg.threads = atoi(argv[3]);
  char path[4096];
  for (int i = 0; i < m_NUM_ARGS; ++i) {
    args[i] = alloc(m_arg_bytes[i]);
    snprintf(path, sizeof path, "%s/in%d.bin", argv[2], i);
    FILE* f = fopen(path, "rb");
    if (!f || (m_arg_bytes[i] && fread(args[i], 1, m_arg_bytes[i], f) != (size_t)m_arg_bytes[i])) {
      fprintf(stderr, "cannot read %s\n", path);
      return 3;
    }
    fclose(f);
  }
  if (run_once(1)) { fprintf(stderr, "first run failed\n"); return 4; }
  printf("workers %d\n", threads_now() - 1);
  fflush(stdout);                    /* not again from the forked children's exit */
  pthread_t t[4];
  int bad[4] = {0};
  for (int k = 0; k < 4; ++k) pthread_create(&t[k], NULL, caller, &bad[k]);
  for (int k = 0; k < 4; ++k) pthread_join(t[k], NULL);
  for (int k = 0; k < 4; ++k) if (bad[k]) { fprintf(stderr, "concurrent caller %d differs\n", k); return 5; }
  if (forked(2)) { fprintf(stderr, "forked child failed\n"); return 6; }
  if (run_once(0)) { fprintf(stderr, "run after fork differs\n"); return 7; }
  if (atoi(argv[4])) {
    dlclose(h);
    printf("after dlclose %d\n", threads_now() - 1);
  }
  fflush(stdout);
  return 0;
}
