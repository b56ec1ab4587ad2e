/* driver.c: runs a tgc AOT bundle (tgc compile -t c) once and checks its outputs; used by
 * tests/test_driver.c, built with only the bundle's model.c and kernel files:
 *   cc -O2 -Wall -Werror -I DIR -include CASE.h tests/aot/driver.c DIR/model.c DIR/KERNEL.c... -lm
 *   a.out INPUTS.bin EXPECT.bin
 * CASE.h (written by the test) defines AOT_IN_BYTES, AOT_OUT_BYTES (initialisers of byte counts per
 * input/output) and AOT_OUT_KIND (0 exact bytes, 1 float, 2 double, 3 half, 4 bfloat16).
 * INPUTS.bin / EXPECT.bin are the inputs / expected outputs back to back. Exit 0 when every output
 * matches (float rtol 1e-4 atol 1e-5, half/bfloat16 1e-2, NaN == NaN), 1 on a mismatch, 2 on errors. */
#include "model.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t in_bytes[] = AOT_IN_BYTES, out_bytes[] = AOT_OUT_BYTES;
static const int out_kind[] = AOT_OUT_KIND;

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)l + 1);
  *n = p ? fread(p, 1, (size_t)l, f) : 0;
  fclose(f);
  return p;
}
static float h2f(unsigned short h) {
  unsigned s = (h >> 15) & 1u, e = (h >> 10) & 31u, m = h & 1023u;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024u), (int)e - 25);
  return s ? -v : v;
}
static float bf2f(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double val(int kind, const unsigned char *p, size_t i) {
  float f;
  double d;
  unsigned short h;
  switch (kind) {
  case 1: memcpy(&f, p + 4 * i, 4); return f;
  case 2: memcpy(&d, p + 8 * i, 8); return d;
  case 3: memcpy(&h, p + 2 * i, 2); return h2f(h);
  default: memcpy(&h, p + 2 * i, 2); return bf2f(h);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s INPUTS.bin EXPECT.bin\n", argv[0]); return 2; }
  size_t nin = 0, nexp = 0, at = 0;
  unsigned char *inb = slurp(argv[1], &nin), *exb = slurp(argv[2], &nexp);
  if (!inb || !exb) { fprintf(stderr, "cannot read the inputs\n"); return 2; }
  void *ins[TGC_MODEL_NINPUTS + 1], *outs[TGC_MODEL_NOUTPUTS + 1];
  for (int i = 0; i < TGC_MODEL_NINPUTS; i++) {
    ins[i] = malloc(in_bytes[i] + 1);
    if (at + in_bytes[i] > nin) { fprintf(stderr, "INPUTS.bin too short\n"); return 2; }
    memcpy(ins[i], inb + at, in_bytes[i]);
    at += in_bytes[i];
  }
  for (int i = 0; i < TGC_MODEL_NOUTPUTS; i++) outs[i] = calloc(1, out_bytes[i] + 1);
  if (tgc_model_run(ins, outs) != 0) { fprintf(stderr, "tgc_model_run failed\n"); return 2; }
  int bad = 0;
  at = 0;
  for (int o = 0; o < TGC_MODEL_NOUTPUTS; o++) {
    const unsigned char *got = outs[o], *want = exb + at;
    if (at + out_bytes[o] > nexp) { fprintf(stderr, "EXPECT.bin too short\n"); return 2; }
    at += out_bytes[o];
    int k = out_kind[o];
    size_t isz = k == 1 ? 4 : k == 2 ? 8 : k ? 2 : 1, n = out_bytes[o] / isz;
    double tol = k >= 3 ? 1e-2 : 1e-4, atol = k >= 3 ? 1e-2 : 1e-5;
    for (size_t i = 0; i < n; i++) {
      bool ok;
      if (k == 0) ok = got[i] == want[i];
      else {
        double a = val(k, got, i), b = val(k, want, i);
        ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + tol * fabs(b);
      }
      if (!ok) {
        if (bad < 5) fprintf(stderr, "output %d element %zu differs\n", o, i);
        bad++;
      }
    }
  }
  printf("%d inputs, %d outputs, %d mismatches\n", TGC_MODEL_NINPUTS, TGC_MODEL_NOUTPUTS, bad);
  return bad ? 1 : 0;
}
