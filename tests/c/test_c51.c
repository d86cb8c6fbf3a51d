/* The C51 kernel (agents/c51_kernel.c) under AddressSanitizer + UBSan: shape checks, the analytic
 * gradients against finite differences of the loss, Adam lowering the loss of a minibatch, and the
 * background steps (agents/c51_async.c) giving bit for bit the synchronous steps' weights.
 * The Python tests compare the same kernel with PyTorch's autograd (tests/test_agents.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c51_async.h"
#include "c51_kernel.h"
#include "page_credit.h"

static int failures;
#define CHECK(cond, ...)                                             \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                            \
            fputc('\n', stderr);                                     \
            failures++;                                              \
        }                                                            \
    } while (0)

static unsigned long long rng = 12345;
static float frand(void)  /* uniform in [0, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng >> 40) / (float)(1ull << 24);
}

enum { NIN = 5, CAP = 64, BATCH = 16 };

typedef struct net {
    c51_shape s;
    c51_weights w, tw;
} net;

static void make_net(net *n, const int *sizes, int nsizes, int n_actions, int n_atoms)
{
    CHECK(c51_shape_init(&n->s, sizes, nsizes, n_actions, n_atoms, -1.0, 2.0) == 0, "shape");
    for (int l = 0; l < n->s.nlayers; l++) {
        size_t nw = (size_t)n->s.in[l] * n->s.in[l + 1], nb = (size_t)n->s.in[l + 1];
        n->w.w[l] = malloc(nw * sizeof(float));
        n->w.b[l] = malloc(nb * sizeof(float));
        n->tw.w[l] = malloc(nw * sizeof(float));
        n->tw.b[l] = malloc(nb * sizeof(float));
        for (size_t i = 0; i < nw; i++) {
            n->w.w[l][i] = (frand() - 0.5f) / sqrtf((float)n->s.in[l]);
            n->tw.w[l][i] = (frand() - 0.5f) / sqrtf((float)n->s.in[l]);
        }
        for (size_t i = 0; i < nb; i++) {
            n->w.b[l][i] = 0.1f * (frand() - 0.5f);
            n->tw.b[l][i] = 0.1f * (frand() - 0.5f);
        }
    }
}

static void free_net(net *n)
{
    for (int l = 0; l < n->s.nlayers; l++) {
        free(n->w.w[l]);
        free(n->w.b[l]);
        free(n->tw.w[l]);
        free(n->tw.b[l]);
    }
}

static void test_shapes(void)
{
    c51_shape s;
    int ok[2] = {7, 10}, zero[2] = {7, 0};
    CHECK(c51_shape_init(&s, ok, 2, 2, 51, 0.0, 10.0) == 0 && s.in[2] == 102, "Harmonia's 7-10-(2x51)");
    CHECK(c51_shape_init(&s, zero, 2, 2, 51, 0.0, 10.0) < 0, "a zero-width layer is refused");
    CHECK(c51_shape_init(&s, ok, 2, 2, 1, 0.0, 10.0) < 0, "one atom is refused");
    CHECK(c51_shape_init(&s, ok, 2, 30, 51, 0.0, 10.0) < 0, "an output wider than C51_MAX_WIDTH is refused");
    CHECK(c51_shape_init(&s, ok, 2, 2, 51, 1.0, 1.0) < 0, "an empty support is refused");
    CHECK(c51_shape_init(&s, ok, 0, 2, 51, 0.0, 1.0) < 0, "no layers is refused");
}

/* c51_q (transposed weights) against a plain forward pass over the (out, in) weights. */
static void test_q_in_support(void)
{
    int sizes[2] = {NIN, 8};
    net n;
    make_net(&n, sizes, 2, 3, 11);
    float wt0[NIN * 8], wt1[8 * 33], bt0[8], bt1[33];
    c51_weights wt = {{wt0, wt1}, {bt0, bt1}};
    c51_transpose_weights(&n.s, &n.w, &wt);
    float obs[NIN], q[3];
    for (int k = 0; k < 100; k++) {
        for (int i = 0; i < NIN; i++)
            obs[i] = 4.0f * frand() - 2.0f;
        c51_q(&n.s, &wt, obs, q);
        double h[8], lg[33];
        for (int o = 0; o < 8; o++) {
            double v = n.w.b[0][o];
            for (int i = 0; i < NIN; i++)
                v += (double)n.w.w[0][o * NIN + i] * obs[i];
            h[o] = v / (1.0 + exp(-v));
        }
        for (int o = 0; o < 33; o++) {
            lg[o] = n.w.b[1][o];
            for (int i = 0; i < 8; i++)
                lg[o] += (double)n.w.w[1][o * 8 + i] * h[i];
        }
        for (int a = 0; a < 3; a++) {
            double mx = lg[a * 11], den = 0.0, num = 0.0;
            for (int i = 1; i < 11; i++)
                mx = lg[a * 11 + i] > mx ? lg[a * 11 + i] : mx;
            for (int i = 0; i < 11; i++) {
                double e = exp(lg[a * 11 + i] - mx);
                den += e;
                num += e * (-1.0 + 3.0 * i / 10.0);
            }
            CHECK(q[a] >= -1.0f - 1e-5f && q[a] <= 2.0f + 1e-5f, "q %g outside the support", q[a]);
            CHECK(fabs(q[a] - num / den) < 1e-5, "q %g, plain forward %g", q[a], num / den);
        }
    }
    free_net(&n);
}

/* Analytic gradients of c51_gradients against central differences of its loss, for a network
 * with two hidden layers (swish backprop through both). */
static void test_gradients_match_finite_differences(void)
{
    int sizes[3] = {NIN, 6, 4};
    net n;
    make_net(&n, sizes, 3, 2, 11);
    float obs[CAP * NIN], next[CAP * NIN], rew[CAP];
    int64_t act[CAP], idx[BATCH];
    for (int i = 0; i < CAP * NIN; i++) {
        obs[i] = frand();
        next[i] = frand();
    }
    for (int i = 0; i < CAP; i++) {
        rew[i] = 3.0f * frand() - 1.0f;
        act[i] = i % 2;
    }
    for (int s = 0; s < BATCH; s++)
        idx[s] = (int64_t)(frand() * CAP);
    c51_replay rb = {obs, next, rew, act, NULL, NULL, NULL, 0, NULL, NULL, NULL};
    c51_trainer t;
    CHECK(c51_trainer_init(&t, &n.s, 0.5, 1e-3, 0.9, 0.999, 1e-8, BATCH) == 0, "trainer init");
    t.params = n.w;
    t.target = n.tw;
    double loss = c51_gradients(&t, &rb, idx, 1.0, -0.5, 1.0);
    CHECK(isfinite(loss) && loss > 0, "loss %g", loss);
    int checked = 0, bad = 0;
    for (int l = 0; l < n.s.nlayers; l++) {
        size_t nw = (size_t)n.s.in[l] * n.s.in[l + 1];
        float *grad = malloc(nw * sizeof(float));
        memcpy(grad, t.gw[l], nw * sizeof(float));
        float scale = 0.0f;  /* tolerance relative to the layer's largest gradient */
        for (size_t i = 0; i < nw; i++)
            scale = fabsf(grad[i]) > scale ? fabsf(grad[i]) : scale;
        CHECK(scale > 1e-4f, "layer %d has no gradient", l);
        for (size_t i = 0; i < nw; i += 2) {
            float keep = n.w.w[l][i], h = 1e-2f;
            n.w.w[l][i] = keep + h;
            double up = c51_gradients(&t, &rb, idx, 1.0, -0.5, 1.0);
            n.w.w[l][i] = keep - h;
            double down = c51_gradients(&t, &rb, idx, 1.0, -0.5, 1.0);
            n.w.w[l][i] = keep;
            double fd = (up - down) / (2.0 * h);
            checked++;
            if (fabs(fd - grad[i]) > 2e-5 + 1e-2 * scale) {
                bad++;
                fprintf(stderr, "layer %d weight %zu: analytic %g, finite difference %g\n", l, i, grad[i], fd);
            }
        }
        free(grad);
    }
    CHECK(checked > 50 && bad == 0, "%d of %d weight gradients differ from finite differences", bad, checked);
    /* Adam on this one minibatch drives the loss towards its floor, the targets' entropy: the
     * KL divergence (loss - entropy) falls by more than half. */
    t.lr = 1e-2;
    double before = c51_gradients(&t, &rb, idx, 1.0, -0.5, 1.0), entropy = 0.0, after = before;
    for (int i = 0; i < BATCH * n.s.n_atoms; i++)
        entropy -= t.m[i] > 0 ? t.m[i] * log(t.m[i]) / BATCH : 0.0;
    for (int k = 0; k < 300; k++) {
        after = c51_gradients(&t, &rb, idx, 1.0, -0.5, 1.0);
        c51_adam(&t);
    }
    CHECK(after - entropy < 0.5 * (before - entropy) && t.steps == 300,
          "Adam: KL %g -> %g after %lld steps", before - entropy, after - entropy, t.steps);
    CHECK(c51_trainer_bytes(&t) > 0, "trainer bytes");
    /* Per-transition discounts and the target cache: the same loss and gradients with and
     * without the cache, both when it is filled and when it is read back. */
    float disc[CAP], mcache[CAP * 11];  /* n_atoms = 11 */
    int64_t mgen[CAP] = {0};
    for (int i = 0; i < CAP; i++)
        disc[i] = i % 3 ? 0.5f : 0.0f;
    c51_replay plain = {obs, next, rew, act, disc, NULL, NULL, 0, NULL, NULL, NULL};
    c51_replay cached = {obs, next, rew, act, disc, mcache, mgen, 1, NULL, NULL, NULL};
    double ref = c51_gradients(&t, &plain, idx, 1.0, -0.5, 1.0);
    float g0 = t.gw[0][0], g1 = t.gw[n.s.nlayers - 1][3];
    for (int pass = 0; pass < 2; pass++) {
        double got = c51_gradients(&t, &cached, idx, 1.0, -0.5, 1.0);
        CHECK(got == ref && t.gw[0][0] == g0 && t.gw[n.s.nlayers - 1][3] == g1,
              "target cache pass %d: loss %g vs %g", pass, got, ref);
    }
    CHECK(mgen[idx[0]] == 1, "the cache marks the slots it filled");
    c51_trainer_free(&t);
    free_net(&n);
}

/* The same steps synchronously and through the background queue (minibatches copied at submission,
 * slots overwritten meanwhile, the target cache keyed by version): identical weights and losses. */
static void test_async_matches_sync(void)
{
    int sizes[2] = {NIN, 6};
    enum { K = 11, STEPS = 40 };
    net n[2];
    float obs[2][CAP * NIN], next[2][CAP * NIN], rew[2][CAP], disc[2][CAP], mcache[2][CAP * K];
    int64_t act[2][CAP], ver[2][CAP], mgen[2][CAP], mver[2][CAP], idx[BATCH];
    double losses[STEPS];
    c51_trainer t[2];
    c51_replay rb[2];
    for (int k = 0; k < 2; k++) {
        rng = 777;  /* the same network twice */
        make_net(&n[k], sizes, 2, 2, K);
        CHECK(c51_trainer_init(&t[k], &n[k].s, 0.9, 1e-2, 0.9, 0.999, 1e-8, BATCH) == 0, "trainer init");
        t[k].params = n[k].w;
        t[k].target = n[k].tw;
        memset(mgen[k], 0, sizeof mgen[k]);
        memset(mver[k], 0, sizeof mver[k]);
        c51_replay r = {obs[k], next[k], rew[k], act[k], disc[k], mcache[k], mgen[k], 1, NULL, ver[k], mver[k]};
        rb[k] = r;
    }
    /* A shadow ring of 16 rows: with 5 pushes per step and 3 queued steps, the owner runs out of
     * shadow rows and must wait for (or run) the oldest step before it pushes over a slot. */
    c51_async *a = c51_async_new(&t[1], &rb[1], CAP, NIN, 3, 16);
    CHECK(a != NULL, "async queue");
    long long written = 0;
    for (int step = 0; step < STEPS; step++) {
        for (int w = 0; w < 5; w++, written++) {  /* push 5 transitions into both buffers */
            int j = (int)(written % CAP);
            float o[NIN], x[NIN], r = 2.0f * frand() - 0.5f, g = written % 4 ? 0.9f : 0.0f;
            int64_t ac = (int64_t)(frand() * 2.0f);
            for (int i = 0; i < NIN; i++)
                o[i] = frand(), x[i] = frand();
            memcpy(obs[0] + j * NIN, o, sizeof o);  /* the synchronous trainer's ring, directly */
            memcpy(next[0] + j * NIN, x, sizeof x);
            rew[0][j] = r, disc[0][j] = g, act[0][j] = ac, ver[0][j] = written + 1;
            c51_async_push(a, written, o, x, ac, r, g, written + 1);  /* waiting steps keep their rows */
        }
        for (int s = 0; s < BATCH; s++)
            idx[s] = (int64_t)(frand() * (written < CAP ? written : CAP));
        losses[step] = c51_gradients(&t[0], &rb[0], idx, 1.5, -0.5, 2.0);
        c51_adam(&t[0]);
        c51_async_submit(a, idx, rb[1].gen, 1.5, -0.5, 2.0, written);
        if (step % 10 == 9)
            c51_async_flush(a);
    }
    const long long *exps;
    const double *got;
    size_t nres = c51_async_take(a, &exps, &got);
    CHECK(nres == STEPS && exps[STEPS - 1] == written, "%zu results", nres);
    for (size_t i = 0; i < nres && i < STEPS; i++)
        CHECK(got[i] == losses[i], "step %zu: loss %g (background) vs %g", i, got[i], losses[i]);
    for (int l = 0; l < n[0].s.nlayers; l++)
        CHECK(memcmp(n[0].w.w[l], n[1].w.w[l], (size_t)n[0].s.in[l] * n[0].s.in[l + 1] * sizeof(float)) == 0
              && memcmp(n[0].w.b[l], n[1].w.b[l], (size_t)n[0].s.in[l + 1] * sizeof(float)) == 0,
              "layer %d: background and synchronous weights differ", l);
    CHECK(t[1].steps == STEPS && c51_async_bytes(a) > 0, "steps %lld", t[1].steps);
    c51_async_free(a);
    for (int k = 0; k < 2; k++) {
        c51_trainer_free(&t[k]);
        free_net(&n[k]);
    }
}

/* The per-page credit table: a transition ends at its page's next decision (bootstrapping), at an
 * end, at the idle horizon or at the horizon; pages that collide in the hash table and thousands
 * of inserts and deletes (the table grows) keep every page findable. */
typedef struct {
    int n;
    double ret[8192], disc[8192];
    int action[8192];
    float next0[8192];
} sink;

static int sink_emit(void *ctx, const float *obs, int action, double ret, const float *next, double disc)
{
    sink *k = ctx;
    (void)obs;
    if (k->n >= 8192)
        return -1;
    k->ret[k->n] = ret;
    k->disc[k->n] = disc;
    k->action[k->n] = action;
    k->next0[k->n] = next[0];
    k->n++;
    return 0;
}

static void test_page_credit(void)
{
    static sink k;
    page_credit c;
    float o1[2] = {1.0f, 0.0f}, o2[2] = {2.0f, 0.0f};
    CHECK(pc_init(&c, 2, 0.5, 100, 10, 1, sink_emit, &k) == 0, "credit init");
    CHECK(pc_decision(&c, 7, o1, 1, 0.25, 0, 0.5, -1) == 0 && pc_find(&c, 7) >= 0, "a decision opens");
    pc_access(&c, 7, 1.0);  /* return 0.25 + 0.5 * 1.0, discount 0.25; no longer idle */
    CHECK(pc_decision(&c, 7, o2, 0, 0.1, 5, 0.5, -1) == 0 && k.n == 1, "the next decision closes it");
    CHECK(k.ret[0] == 0.75 && k.disc[0] == 0.25 && k.action[0] == 1 && k.next0[0] == 2.0f,
          "bootstrapped transition: %g %g", k.ret[0], k.disc[0]);
    CHECK(pc_expire(&c, 15) == 0 && k.n == 2 && k.disc[1] == 0.0 && pc_find(&c, 7) < 0,
          "not accessed within the idle horizon: terminal");
    CHECK(pc_end(&c, 7) == 0 && k.n == 2, "ending a page with nothing open does nothing");
    for (int64_t p = 0; p < 3000; p++)  /* strided pages: many share a hash bucket's neighbourhood */
        CHECK(pc_decision(&c, p << 20, o1, 0, 0.0, 100 + p, 0.5, (int)(p % 3)) == 0, "decision %lld", (long long)p);
    CHECK(c.count == 3000 && c.cap >= 3000, "3000 open, table grown to %d", c.cap);
    for (int64_t p = 0; p < 3000; p += 2)
        CHECK(pc_end(&c, p << 20) == 0, "end");
    int found = 0;
    for (int64_t p = 0; p < 3000; p++)
        found += pc_find(&c, p << 20) >= 0 ? (p % 2 ? 1 : -1000) : 0;
    CHECK(found == 1500 && c.count == 1500, "after deleting every other page, the others are found: %d", found);
    CHECK(pc_expire(&c, 100 + 3000 + 100) == 0 && c.count == 0 && c.head < 0, "all past the horizon");
    CHECK(k.n == 2 + 3000, "every transition emitted once: %d", k.n);
    pc_free(&c);
}

int main(void)
{
    test_shapes();
    test_q_in_support();
    test_gradients_match_finite_differences();
    test_async_matches_sync();
    test_page_credit();
    if (failures) {
        fprintf(stderr, "test_c51: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_c51: all checks passed\n");
    return 0;
}
