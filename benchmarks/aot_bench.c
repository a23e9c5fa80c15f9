/* Times a library written by `hloc compile --name m` from C (benchmarks/aot.py builds it
 * with -include m.h). Usage: aot_bench IN_DIR REPEAT THREADS
 * Reads IN_DIR/in<i>.bin, calls m_run_with REPEAT times after 3 warm-up calls, prints
 * "best_us median_us" and writes IN_DIR/c_out<j>.bin (the last call's results). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* Large buffers on 2 MiB boundaries with transparent huge pages requested, as NumPy does
 * for its arrays (so `hloc run` and the C driver see the same TLB behaviour). */
static void* alloc(int64_t n) {
  if (!n) return NULL;
  if (n < (4 << 20)) return aligned_alloc(64, (n + 63) / 64 * 64);
  int64_t size = (n + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  void* p = aligned_alloc(2 << 20, size);
  if (p) madvise(p, size, MADV_HUGEPAGE);
  return p;
}
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }

int main(int argc, char** argv) {
  if (argc != 4) { fprintf(stderr, "usage: aot_bench IN_DIR REPEAT THREADS\n"); return 2; }
  int repeat = atoi(argv[2]);
  void* args[m_NUM_ARGS + 1]; void* res[m_NUM_RESULTS + 1];
  char path[4096];
  for (int i = 0; i < m_NUM_ARGS; ++i) {
    args[i] = alloc(m_arg_bytes[i]);
    snprintf(path, sizeof path, "%s/in%d.bin", argv[1], i);
    FILE* f = fopen(path, "rb");
    if (!f || (m_arg_bytes[i] && fread(args[i], 1, m_arg_bytes[i], f) != (size_t)m_arg_bytes[i])) { fprintf(stderr, "bad %s\n", path); return 3; }
    fclose(f);
  }
  for (int j = 0; j < m_NUM_RESULTS; ++j) res[j] = alloc(m_result_bytes[j]);
  void* scratch = alloc(m_SCRATCH_BYTES);
  m_config cfg = {atoi(argv[3]), NULL, NULL};
  double* t = malloc(sizeof(double) * repeat);
  for (int k = 0; k < 3; ++k) if (m_run_with(args, res, scratch, &cfg)) return 4;
  for (int k = 0; k < repeat; ++k) {
    double t0 = now();
    int rc = m_run_with(args, res, scratch, &cfg);
    t[k] = now() - t0;
    if (rc) { fprintf(stderr, "rc %d\n", rc); return 4; }
  }
  qsort(t, repeat, sizeof(double), cmp);
  printf("%.3f %.3f\n", t[0] * 1e6, t[repeat / 2] * 1e6);
  for (int j = 0; j < m_NUM_RESULTS; ++j) {
    snprintf(path, sizeof path, "%s/c_out%d.bin", argv[1], j);
    FILE* f = fopen(path, "wb");
    if (m_result_bytes[j]) fwrite(res[j], 1, m_result_bytes[j], f);
    fclose(f);
  }
  return 0;
}
