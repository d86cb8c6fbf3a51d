/* The numerical kernel of the C51 agents: see c51_kernel.h. */
#include "c51_kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The minibatch step is built twice on x86-64 Linux with GCC, for AVX2 and for the baseline, and
 * the loader picks one for the CPU (ifunc); the helpers are inlined into it. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define C51_HOT __attribute__((target_clones("avx2", "default")))
#define C51_INLINE static inline __attribute__((always_inline))
#else
#define C51_HOT
#define C51_INLINE static inline
#endif

int c51_shape_init(c51_shape *s, const int *sizes, int n, int n_actions, int n_atoms, double v_min, double v_max)
{
    if (n < 1 || n > C51_MAX_LAYERS - 1 || n_actions < 1 || n_atoms < 2
        || (long)n_actions * n_atoms > C51_MAX_WIDTH || !(v_max > v_min))
        return -1;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 1 || sizes[i] > C51_MAX_WIDTH)
            return -1;
        s->in[i] = sizes[i];
    }
    s->nlayers = n;
    s->in[n] = n_actions * n_atoms;
    s->n_actions = n_actions;
    s->n_atoms = n_atoms;
    s->v_min = (float)v_min;
    s->v_max = (float)v_max;
    return 0;
}

/* exp(x) in float32 to ~1 ulp (Cephes' expf: 2^n times a polynomial), written so that loops over
 * it vectorise; x is clamped to [-87.3, 88] so results stay finite and normal. */
C51_INLINE float fexp(float x)
{
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  /* round to nearest */
    x = x - n * 0.693359375f - n * -2.12194440e-4f;
    float y = ((((1.9875691500e-4f * x + 1.3981999507e-3f) * x + 8.3334519073e-3f) * x + 4.1665795894e-2f) * x
               + 1.6666665459e-1f) * x + 5.0000001201e-1f;
    y = y * x * x + x + 1.0f;
    union { int32_t i; float f; } e = {.i = ((int32_t)n + 127) << 23};
    return y * e.f;
}

C51_INLINE float sigmoid(float x) { return 1.0f / (1.0f + fexp(-x)); }

/* Reductions over 8 independent lanes: they vectorise without reassociating one long chain. */
#define LANES 8
C51_INLINE float vmax(const float *a, int n)
{
    float acc[LANES], m;
    int i = 0;
    for (int k = 0; k < LANES; k++)
        acc[k] = a[0];
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] = a[i + k] > acc[k] ? a[i + k] : acc[k];
    m = acc[0];
    for (int k = 1; k < LANES; k++)
        m = acc[k] > m ? acc[k] : m;
    for (; i < n; i++)
        m = a[i] > m ? a[i] : m;
    return m;
}

C51_INLINE float vdot(const float *a, const float *b, int n)  /* b == NULL: the sum of a */
{
    float acc[LANES] = {0}, s = 0.0f;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] += a[i + k] * (b ? b[i + k] : 1.0f);
    for (; i < n; i++)
        s += a[i] * (b ? b[i] : 1.0f);
    for (int k = 0; k < LANES; k++)
        s += acc[k];
    return s;
}

/* Softmax of n logits into p (in place allowed); returns max + log(sum), for log-softmax. */
C51_INLINE float softmax(const float *lg, int n, float *p)
{
    float m = vmax(lg, n);
    for (int i = 0; i < n; i++)
        p[i] = fexp(lg[i] - m);
    float den = vdot(p, NULL, n), inv = 1.0f / den;
    for (int i = 0; i < n; i++)
        p[i] *= inv;
    return m + logf(den);
}

/* o[k] = b[k] + sum_i x[i] wt[i][k] for k in [k0, k0 + nb), summed in input order with the nb
 * sums in registers (nb a constant after inlining). Returns k0 + nb. */
C51_INLINE int dense_block(const float *xs, int ni, const float *wt, int ld, const float *b, int k0, int nb,
                           float *o)
{
    float acc[16];
    for (int k = 0; k < nb; k++)
        acc[k] = b[k0 + k];
    for (int i = 0; i < ni; i++) {
        const float xi = xs[i], *w = wt + (size_t)i * ld + k0;
        for (int k = 0; k < nb; k++)
            acc[k] += w[k] * xi;
    }
    for (int k = 0; k < nb; k++)
        o[k0 + k] = acc[k];
    return k0 + nb;
}

/* out (B x ncols) = x (B x ni) W^T + b for the output columns [col, col + ncols) of a layer with
 * transposed weights wt (ni x ld); per-sample first columns when `cols` is given. Each output is
 * b + x_0 w_0 + x_1 w_1 + ... in input order, 16 or 8 outputs at a time in registers. */
C51_INLINE void dense(const float *x, int B, int ni, const float *wt, int ld, const float *b, const int *cols,
                      int ncols, float *out)
{
    for (int s = 0; s < B; s++) {
        const float *xs = x + (size_t)s * ni, *ws = wt + (cols ? cols[s] : 0), *bs = b + (cols ? cols[s] : 0);
        float *o = out + (size_t)s * ncols;
        int k = 0;
        while (k + 16 <= ncols)
            k = dense_block(xs, ni, ws, ld, bs, k, 16, o);
        if (k + 8 <= ncols)
            k = dense_block(xs, ni, ws, ld, bs, k, 8, o);
        while (k < ncols)
            k = dense_block(xs, ni, ws, ld, bs, k, 1, o);
    }
}

/* y[0..np) = sum_o g[o] W[o][0..np) over `width` rows of W (row stride np, a multiple of 16),
 * 16 columns at a time in registers. */
C51_INLINE void gemv_t(const float *g, const float *w, int width, int np, float *y)
{
    for (int i0 = 0; i0 < np; i0 += 16) {
        float acc[16] = {0};
        for (int o = 0; o < width; o++) {
            const float go = g[o], *wo = w + (size_t)o * np + i0;
            for (int k = 0; k < 16; k++)
                acc[k] += go * wo[k];
        }
        memcpy(y + i0, acc, sizeof acc);
    }
}

/* acc[q] = row[o0 + q] + sum over the samples sel[0..n) of x_s g_s[o0 + q] (x_s = xin[s][i], or 1
 * for the bias row i < 0), in sample order, for q < nb (a constant after inlining); stored back. */
C51_INLINE int grad_block(const float *g, const float *xin, const int *sel, int n, int ni, int i, int width,
                          int o0, int nb, float *row)
{
    float acc[16];
    for (int q = 0; q < nb; q++)
        acc[q] = row[o0 + q];
    for (int k = 0; k < n; k++) {
        const float xi = i < 0 ? 1.0f : xin[(size_t)sel[k] * ni + i], *gs = g + (size_t)sel[k] * width + o0;
        for (int q = 0; q < nb; q++)
            acc[q] += xi * gs[q];
    }
    for (int q = 0; q < nb; q++)
        row[o0 + q] = acc[q];
    return o0 + nb;
}

/* dW (accumulated transposed: gwt is in x out) and db of one layer over a chunk's C samples:
 * sample s adds x_s[i] g_s to row i and g_s to the biases, in its columns [r0, r0 + width)
 * (r0 = cols[s] for the output layer, whose samples touch their action's atoms only; 0 for the
 * others). Each element gets the samples' terms in sample order - the sum a per-sample loop
 * makes - with 16 columns of a row at a time in registers across the samples. */
C51_INLINE void grad_weights(const float *g, const float *xin, int C, int ni, int no, int width, const int *cols,
                             float *gwt, float *gb)
{
    int sel[C51_CHUNK];
    for (int r0 = 0; r0 < (cols ? no : width); r0 += width) {
        int n = 0;
        for (int smp = 0; smp < C; smp++)
            if (!cols || cols[smp] == r0)
                sel[n++] = smp;
        for (int i = -1; n && i < ni; i++) {  /* i = -1: the biases */
            float *row = i < 0 ? gb + r0 : gwt + (size_t)i * no + r0;
            int o = 0;
            while (o + 16 <= width)
                o = grad_block(g, xin, sel, n, ni, i, width, o, 16, row);
            if (o + 8 <= width)
                o = grad_block(g, xin, sel, n, ni, i, width, o, 8, row);
            while (o < width)
                o = grad_block(g, xin, sel, n, ni, i, width, o, 1, row);
        }
    }
}

C51_INLINE void swish(const float *pre, float *post, size_t n)
{
    for (size_t i = 0; i < n; i++)
        post[i] = pre[i] * sigmoid(pre[i]);
}

/* wt (cols x rows, row stride ld) = w (rows x cols) transposed. */
C51_INLINE void transpose(const float *w, int rows, int cols, float *wt, int ld)
{
    for (int o = 0; o < rows; o++)
        for (int i = 0; i < cols; i++)
            wt[(size_t)i * ld + o] = w[(size_t)o * cols + i];
}

void c51_q(const c51_shape *s, const c51_weights *wt, const float *obs, float *q)
{
    float a[C51_MAX_WIDTH], h[C51_MAX_WIDTH], p[C51_MAX_WIDTH];
    memcpy(a, obs, (size_t)s->in[0] * sizeof(float));
    for (int l = 0; l < s->nlayers; l++) {  /* h = b + sum_i a_i W^T[i]: along the outputs */
        int ni = s->in[l], no = s->in[l + 1];
        dense(a, 1, ni, wt->w[l], no, wt->b[l], NULL, no, h);
        if (l + 1 < s->nlayers)
            swish(h, a, (size_t)no);
    }
    int K = s->n_atoms;
    float dz = (s->v_max - s->v_min) / (float)(K - 1);
    for (int act = 0; act < s->n_actions; act++) {
        softmax(h + (size_t)act * K, K, p);
        float sum_i = 0.0f;  /* sum_i p_i z_i = v_min + dz * sum_i p_i i */
        for (int i = 0; i < K; i++)
            sum_i += p[i] * (float)i;
        q[act] = s->v_min + dz * sum_i;
    }
}

#define PAD16(n) (((n) + 15) / 16 * 16)

void c51_transpose_weights(const c51_shape *s, const c51_weights *w, c51_weights *wt)
{
    for (int l = 0; l < s->nlayers; l++) {
        transpose(w->w[l], s->in[l + 1], s->in[l], wt->w[l], s->in[l + 1]);
        memcpy(wt->b[l], w->b[l], (size_t)s->in[l + 1] * sizeof(float));
    }
}

int c51_trainer_init(c51_trainer *t, const c51_shape *s, double gamma, double lr, double beta1, double beta2,
                     double eps, int batch)
{
    memset(t, 0, sizeof *t);
    t->shape = *s;
    t->gamma = (float)gamma;
    t->lr = lr;
    t->beta1 = beta1;
    t->beta2 = beta2;
    t->eps = eps;
    t->batch = batch;
    int L = s->nlayers, K = s->n_atoms, hid = 1;  /* widest hidden layer */
    size_t C = C51_CHUNK, total = 0;
    for (int l = 1; l < L; l++)
        hid = s->in[l] > hid ? s->in[l] : hid;
    size_t wide = (size_t)(s->in[L] > hid ? s->in[L] : hid), gw = (size_t)(K > hid ? K : hid);
    for (int l = 0; l < L; l++)  /* gw gwt mw vw wt twt (weights), wp (padded rows), gb mb vb (biases),
                                  * pre post (hidden) */
        total += 6 * (size_t)s->in[l] * s->in[l + 1]
                 + (size_t)PAD16(s->in[l]) * s->in[l + 1] + 3 * (size_t)s->in[l + 1]
                 + (l + 1 < L ? 2 * C * s->in[l + 1] : 0);
    total += 2 * C * s->in[0] + 2 * C * wide + C * gw + C * hid + 2 * C * K + K + 2 * C;
    /* x xn, ta tb (target net), g gi (backward), logits m, z, r gd */
    t->scratch = calloc(total, sizeof(float));
    t->cols = calloc(C, sizeof(int));
    if (!t->scratch || !t->cols) {
        c51_trainer_free(t);
        return -1;
    }
    float *p = t->scratch;
#define TAKE(ptr, n) ((ptr) = p, p += (n))
    for (int l = 0; l < L; l++) {
        size_t nw = (size_t)s->in[l] * s->in[l + 1], nb = (size_t)s->in[l + 1];
        TAKE(t->gw[l], nw), TAKE(t->gwt[l], nw), TAKE(t->mw[l], nw), TAKE(t->vw[l], nw);
        TAKE(t->wt[l], nw), TAKE(t->twt[l], nw);
        TAKE(t->wp[l], (size_t)PAD16(s->in[l]) * nb);
        TAKE(t->gb[l], nb), TAKE(t->mb[l], nb), TAKE(t->vb[l], nb);
        if (l + 1 < L)
            TAKE(t->pre[l], C * nb), TAKE(t->post[l], C * nb);
    }
    TAKE(t->x, C * s->in[0]), TAKE(t->xn, C * s->in[0]);
    TAKE(t->ta, C * wide), TAKE(t->tb, C * wide), TAKE(t->g, C * gw), TAKE(t->gi, C * hid);
    TAKE(t->logits, C * K), TAKE(t->m, C * K), TAKE(t->z, (size_t)K), TAKE(t->r, C), TAKE(t->gd, C);
#undef TAKE
    t->scratch_floats = total;
    for (int i = 0; i < K; i++)
        t->z[i] = s->v_min + (s->v_max - s->v_min) * (float)i / (float)(K - 1);
    return 0;
}

void c51_trainer_free(c51_trainer *t)
{
    free(t->scratch);
    free(t->cols);
    t->scratch = NULL;
    t->cols = NULL;
}

size_t c51_trainer_bytes(const c51_trainer *t)
{
    return t->scratch_floats * sizeof(float) + C51_CHUNK * sizeof(int);
}

/* C51's target for every sample: the target network's return distribution of the greedy next
 * action, projected from r + g * z onto the support, into t->m (B x n_atoms); g is the sample's
 * discount (gamma, or the replay's per-transition discount: 0 for a terminal transition). */
C51_INLINE void targets(c51_trainer *t, int B)
{
    const c51_shape *s = &t->shape;
    int L = s->nlayers, K = s->n_atoms, nout = s->in[L];
    const float *a = t->xn;
    float *bufs[2] = {t->ta, t->tb};
    for (int l = 0; l < L; l++) {
        float *h = bufs[l % 2];
        dense(a, B, s->in[l], t->twt[l], s->in[l + 1], t->target.b[l], NULL, s->in[l + 1], h);
        if (l + 1 < L)
            swish(h, h, (size_t)B * s->in[l + 1]);
        a = h;
    }
    float dz = (s->v_max - s->v_min) / (float)(K - 1), p[C51_MAX_WIDTH], best[C51_MAX_WIDTH];
    for (int smp = 0; smp < B; smp++) {
        const float *lg = a + (size_t)smp * nout;
        float best_q = 0.0f;
        for (int act = 0; act < s->n_actions; act++) {
            softmax(lg + (size_t)act * K, K, p);
            float q = vdot(p, t->z, K);
            if (act == 0 || q > best_q) {  /* the first maximum, as torch.argmax */
                best_q = q;
                memcpy(best, p, (size_t)K * sizeof(float));
            }
        }
        float *m = t->m + (size_t)smp * K, r = t->r[smp], g = t->gd[smp];
        memset(m, 0, (size_t)K * sizeof(float));
        for (int i = 0; i < K; i++) {
            float tz = r + g * t->z[i];
            tz = tz < s->v_min ? s->v_min : tz > s->v_max ? s->v_max : tz;
            float bb = (tz - s->v_min) / dz;  /* >= 0, so truncation is floor */
            int lo = (int)bb, hi = lo + ((float)lo < bb);
            lo = lo > K - 1 ? K - 1 : lo;  /* guards against rounding at the support's end */
            hi = hi > K - 1 ? K - 1 : hi;
            m[lo] += best[i] * ((float)hi - bb + (lo == hi ? 1.0f : 0.0f));
            m[hi] += best[i] * (bb - (float)lo);
        }
    }
}

C51_HOT double c51_gradients(c51_trainer *t, const c51_replay *rb, const int64_t *idx, double scale,
                             double r_lo, double r_hi)
{
    const c51_shape *s = &t->shape;
    int B = t->batch, L = s->nlayers, K = s->n_atoms, nin = s->in[0];
    int *cols = t->cols;
    for (int l = 0; l < L; l++) {
        transpose(t->params.w[l], s->in[l + 1], s->in[l], t->wt[l], s->in[l + 1]);
        transpose(t->target.w[l], s->in[l + 1], s->in[l], t->twt[l], s->in[l + 1]);
        for (int o = 0, ni = s->in[l], np = PAD16(ni); o < s->in[l + 1]; o++)  /* padding stays 0 */
            memcpy(t->wp[l] + (size_t)o * np, t->params.w[l] + (size_t)o * ni, (size_t)ni * sizeof(float));
        memset(t->gwt[l], 0, (size_t)s->in[l] * s->in[l + 1] * sizeof(float));
        memset(t->gb[l], 0, (size_t)s->in[l + 1] * sizeof(float));
    }
    double loss = 0.0;
    for (int c0 = 0; c0 < B; c0 += C51_CHUNK) {  /* chunks of the minibatch: small scratch memory */
        int C = B - c0 < C51_CHUNK ? B - c0 : C51_CHUNK;
        for (int smp = 0; smp < C; smp++) {  /* gather */
            int64_t j = idx[c0 + smp];
            memcpy(t->x + (size_t)smp * nin, rb->obs + (size_t)j * nin, (size_t)nin * sizeof(float));
            memcpy(t->xn + (size_t)smp * nin, rb->next + (size_t)j * nin, (size_t)nin * sizeof(float));
            float v = (float)(rb->rew[j] * scale);
            t->r[smp] = v < r_lo ? (float)r_lo : v > r_hi ? (float)r_hi : v;
            t->gd[smp] = rb->disc ? rb->disc[j] : t->gamma;
            cols[smp] = (int)rb->act[j] * K;
        }
        if (rb->mcache) {  /* targets only for transitions not cached under this target network */
            int nm = 0;
            for (int smp = 0; smp < C; smp++) {
                int64_t j = idx[c0 + smp], sl = rb->slot ? rb->slot[j] : j;
                if (rb->mgen[sl] == rb->gen && (!rb->ver || rb->mver[sl] == rb->ver[j]))
                    continue;
                memcpy(t->xn + (size_t)nm * nin, t->xn + (size_t)smp * nin, (size_t)nin * sizeof(float));
                t->r[nm] = t->r[smp];
                t->gd[nm] = t->gd[smp];
                t->cols[nm] = (int)j;  /* cols is rebuilt below */
                nm++;
            }
            if (nm) {
                targets(t, nm);
                for (int k = 0; k < nm; k++) {
                    int64_t j = t->cols[k], sl = rb->slot ? rb->slot[j] : j;
                    memcpy(rb->mcache + (size_t)sl * K, t->m + (size_t)k * K, (size_t)K * sizeof(float));
                    rb->mgen[sl] = rb->gen;
                    if (rb->ver)
                        rb->mver[sl] = rb->ver[j];
                }
            }
            for (int smp = 0; smp < C; smp++) {
                int64_t j = idx[c0 + smp], sl = rb->slot ? rb->slot[j] : j;
                memcpy(t->m + (size_t)smp * K, rb->mcache + (size_t)sl * K, (size_t)K * sizeof(float));
                cols[smp] = (int)rb->act[j] * K;
            }
        } else {
            targets(t, C);
        }
        /* Forward of the training network; its output layer only for the taken actions' atoms. */
        const float *a = t->x;
        for (int l = 0; l + 1 < L; l++) {
            dense(a, C, s->in[l], t->wt[l], s->in[l + 1], t->params.b[l], NULL, s->in[l + 1], t->pre[l]);
            swish(t->pre[l], t->post[l], (size_t)C * s->in[l + 1]);
            a = t->post[l];
        }
        dense(a, C, s->in[L - 1], t->wt[L - 1], s->in[L], t->params.b[L - 1], cols, K, t->logits);
        /* Cross-entropy -sum_i m_i log softmax_i; d/dlogit = softmax * sum(m) - m, over B samples. */
        float *g = t->g;
        for (int smp = 0; smp < C; smp++) {
            const float *lg = t->logits + (size_t)smp * K, *m = t->m + (size_t)smp * K;
            float *gs = g + (size_t)smp * K;
            float lse = softmax(lg, K, gs), msum = vdot(m, NULL, K);
            loss -= (double)vdot(m, lg, K) - (double)msum * lse;
            for (int i = 0; i < K; i++)
                gs[i] = (gs[i] * msum - m[i]) / (float)B;
        }
        /* Backward, layer by layer: dW accumulated transposed (in, out) so that the inner loops
         * run along the outputs, db, and d(input) = g W (rows of W along the inputs: no
         * horizontal sums). */
        for (int l = L - 1; l >= 0; l--) {
            int ni = s->in[l], no = s->in[l + 1], last = l == L - 1, width = last ? K : no;
            const float *xin = l == 0 ? t->x : t->post[l - 1], *wp = t->wp[l];
            int np = PAD16(ni);
            float *gi = t->gi;
            grad_weights(g, xin, C, ni, no, width, last ? cols : NULL, t->gwt[l], t->gb[l]);
            for (int smp = 0; l > 0 && smp < C; smp++) {  /* d(input) = g W */
                float acc[C51_MAX_WIDTH + 16];
                gemv_t(g + (size_t)smp * width, wp + (size_t)(last ? cols[smp] : 0) * np, width, np, acc);
                memcpy(gi + (size_t)smp * ni, acc, (size_t)ni * sizeof(float));
            }
            if (l > 0) {  /* through swish: d/dx x sig(x) = sig(x) (1 + x (1 - sig(x))) */
                const float *pre = t->pre[l - 1];
                size_t n = (size_t)C * ni;
                for (size_t i = 0; i < n; i++) {
                    float sg = sigmoid(pre[i]);
                    g[i] = gi[i] * sg * (1.0f + pre[i] * (1.0f - sg));
                }
            }
        }
    }
    for (int l = 0; l < L; l++)
        transpose(t->gwt[l], s->in[l], s->in[l + 1], t->gw[l], s->in[l]);
    return loss / B;
}

void c51_adam(c51_trainer *t)
{
    /* torch.optim.Adam: m += (g - m)(1 - b1); v = b2 v + (1 - b2) g^2;
     * p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), bc = 1 - beta^step. */
    const c51_shape *s = &t->shape;
    t->steps++;
    double bc1 = 1.0 - pow(t->beta1, (double)t->steps), bc2 = 1.0 - pow(t->beta2, (double)t->steps);
    float step = (float)(t->lr / bc1), rbc2 = (float)(1.0 / sqrt(bc2)), eps = (float)t->eps;
    float b1 = (float)t->beta1, b2 = (float)t->beta2;
    for (int l = 0; l < s->nlayers; l++) {
        float *par[2] = {t->params.w[l], t->params.b[l]}, *gr[2] = {t->gw[l], t->gb[l]};
        float *mm[2] = {t->mw[l], t->mb[l]}, *vv[2] = {t->vw[l], t->vb[l]};
        size_t cnt[2] = {(size_t)s->in[l] * s->in[l + 1], (size_t)s->in[l + 1]};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < cnt[k]; i++) {
                float gi = gr[k][i];
                mm[k][i] += (gi - mm[k][i]) * (1.0f - b1);
                vv[k][i] = b2 * vv[k][i] + (1.0f - b2) * gi * gi;
                par[k][i] -= step * mm[k][i] / (sqrtf(vv[k][i]) * rbc2 + eps);
            }
    }
}
