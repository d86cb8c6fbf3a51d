/* The numerical kernel of the C51 agents (Harmonia, Sibyl, SAPM), in plain C (no Python).
 *
 * A C51 network is an MLP with swish hidden layers whose output is, for each of n_actions
 * actions, n_atoms logits of a categorical return distribution over the fixed support
 * z_i = v_min + i * (v_max - v_min) / (n_atoms - 1). Weights are row-major (out, in) per layer, as
 * torch.nn.Linear stores them, so a PyTorch module's parameter storage can be used in place.
 *
 *   c51_q()         expected return of each action (the inference network's decision);
 *   c51_gradients() one minibatch of the C51 loss: the target network's distribution of the greedy
 *                   next action, projected from r + gamma * z onto the support, against the
 *                   training network's log-softmax (cross-entropy), with the gradient of every
 *                   parameter; exactly the update PyTorch's autograd computes for agents/c51.py;
 *   c51_adam()      Adam on those gradients, in torch.optim.Adam's form.
 * Batched loops run along contiguous outputs with 16 sums at a time in registers (a layer's
 * outputs across its inputs, dW and db across the samples, d(input) over zero-padded rows of W),
 * each sum in the order a plain loop takes, exp is a vectorisable polynomial (~1 ulp) and the
 * remaining reductions use independent lanes: a minibatch of 128 for Harmonia's placement network
 * takes ~50 µs of CPU (PyTorch autograd: ~15x more). c51_async.h runs the steps in a thread.
 */
#ifndef C51_KERNEL_H
#define C51_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#define C51_MAX_LAYERS 8    /* linear layers, the output layer included */
#define C51_MAX_WIDTH 1024  /* widest layer (n_actions * n_atoms for the output) */
#define C51_CHUNK 32        /* a minibatch is processed this many samples at a time (scratch memory) */

typedef struct c51_shape {
    int nlayers;                 /* linear layers: hidden layers + the output layer */
    int in[C51_MAX_LAYERS + 1];  /* in[l] = inputs of layer l; in[nlayers] = n_actions * n_atoms */
    int n_actions, n_atoms;
    float v_min, v_max;
} c51_shape;

typedef struct c51_weights {
    float *w[C51_MAX_LAYERS];  /* (in[l + 1], in[l]) row-major */
    float *b[C51_MAX_LAYERS];
} c51_weights;

/* The shape of a network with input and hidden widths sizes[0..n-1]; -1 if out of range. */
int c51_shape_init(c51_shape *s, const int *sizes, int n, int n_actions, int n_atoms, double v_min, double v_max);

/* Expected return of each action for one observation; q has n_actions entries. The weights are
 * given transposed: wt->w[l] is (in[l], in[l + 1]) row-major (c51_transpose_weights). */
void c51_q(const c51_shape *s, const c51_weights *wt, const float *obs, float *q);

/* wt->w[l] = w->w[l] transposed and wt->b[l] = w->b[l], for every layer (c51_q's layout). */
void c51_transpose_weights(const c51_shape *s, const c51_weights *w, c51_weights *wt);

/* The replay buffer the minibatch is drawn from (cap transitions, obs of in[0] floats). */
typedef struct c51_replay {
    const float *obs, *next, *rew;
    const int64_t *act;
    const float *disc;            /* per-transition discount of the next state (NULL: gamma) */
    /* Optional cache of each transition's projected target distribution (cap x n_atoms), per
     * cache slot s (s = slot[j] for minibatch row j, or j when slot is NULL): valid while
     * mgen[s] == gen and, when ver is given, mver[s] == ver[j] (the owner bumps gen when the
     * target network or the reward scaling changes; ver[j] is the version of the transition in
     * row j, bumped when its slot is overwritten; without ver the owner zeroes mgen[s] then).
     * NULL mcache: no cache. */
    float *mcache;
    int64_t *mgen;
    int64_t gen;
    const int64_t *slot;
    const int64_t *ver;
    int64_t *mver;
} c51_replay;

typedef struct c51_trainer {
    c51_shape shape;
    c51_weights params;           /* the training network (updated in place) */
    c51_weights target;           /* the target network (read only) */
    float gamma;
    double lr, beta1, beta2, eps;
    int batch;
    long long steps;              /* Adam steps taken */
    float *gw[C51_MAX_LAYERS], *gb[C51_MAX_LAYERS];  /* gradients of the last c51_gradients() */
    float *mw[C51_MAX_LAYERS], *vw[C51_MAX_LAYERS], *mb[C51_MAX_LAYERS], *vb[C51_MAX_LAYERS];
    float *scratch;               /* one allocation for all of the above and below */
    size_t scratch_floats;
    float *gwt[C51_MAX_LAYERS];   /* dW accumulated transposed (in, out) */
    float *wt[C51_MAX_LAYERS], *twt[C51_MAX_LAYERS], *pre[C51_MAX_LAYERS], *post[C51_MAX_LAYERS];
    float *wp[C51_MAX_LAYERS];    /* W (out, in) with rows zero-padded to a multiple of 16 inputs */
    float *x, *xn, *ta, *tb, *logits, *z, *m, *g, *gi, *r, *gd;
    int *cols;
} c51_trainer;

/* Allocate the trainer's state for `batch`-sized minibatches (params/target set by the caller).
 * Returns 0, or -1 when out of memory. */
int c51_trainer_init(c51_trainer *t, const c51_shape *s, double gamma, double lr, double beta1, double beta2,
                     double eps, int batch);
void c51_trainer_free(c51_trainer *t);

/* Loss and gradients of the minibatch idx[0..batch-1] (rewards scaled then clipped to
 * [r_lo, r_hi]); parameters unchanged. */
double c51_gradients(c51_trainer *t, const c51_replay *rb, const int64_t *idx, double scale, double r_lo,
                     double r_hi);

/* One Adam step with the last gradients. */
void c51_adam(c51_trainer *t);

/* Bytes of the trainer's own state (gradients, moments, scratch). */
size_t c51_trainer_bytes(const c51_trainer *t);

#endif
