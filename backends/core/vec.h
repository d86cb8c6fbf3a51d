/* The HSS environment step in C: one env (hss_env_*), or a batch of envs in one call (hss_vec_*).
 *
 * hss_env_step is what one step of hss_gym.envs.parallel.HSSParallelEnv does to the simulator:
 * finish the pending request on the placement agent's device, queue the migration agent's move
 * of the candidate page, begin the next request, pick the next candidate and write both agents'
 * observations (the features of hss_gym/envs/features.py). The binding's HSS.env_step
 * (module.c) is this with Python arguments; the rewards are then computed in Python.
 *
 * hss_vec steps N such envs at once over shared arrays (one row per env) and computes the
 * rewards too (Sibyl's L_ref / latency for placement, Harmonia's eq. 3 for migration), the same
 * floating-point operations in the same order as the Python envs, so the results are identical.
 * Three modes: both agents (hss/Harmonia-v0), or one learner with the other agent fixed, as
 * hss_gym.envs.single.SingleAgentEnv does (hss/Placement-v0, hss/Migration-v0): the learner's
 * step then runs on through the requests on which it has no decision. Episode starts (resets)
 * stay in Python: a slot is (re)loaded after its env was reset there; a slot flagged in `skip`
 * is left alone for that call (Gymnasium's next-step autoreset). The batch can be split over
 * threads (pthreads): each env is touched by one thread only, nothing is shared between envs.
 */
#ifndef HSS_VEC_H
#define HSS_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "hss.h"

/* Feature flags (the env's `_sibyl`): Sibyl's six features (else Harmonia's), the free-space bins
 * of room_feature="fits" (else "fraction"), with FEAT_FITS room_feature="binary". */
#define HSS_FEAT_SIBYL 1
#define HSS_FEAT_FITS 2
#define HSS_FEAT_BINARY 4
#define HSS_FEAT_MAX (HSS_MAX_DEV + 8)

/* Bins of `page`'s features (-1 or an unplaced page: a page never seen) for a request of type
 * `op` and `npages` pages, and each feature's number of bins; returns the number of features. */
int hss_features(hss *h, long long page, int op, uint64_t npages, int flags, int *bins, int *nbins);
/* How many features hss_features gives with these flags and h's devices. */
int hss_feature_count(const hss *h, int flags);
/* The same written as an observation row: float32 scaled to [0, 1] (`raw` = 0) or int64 bins. */
int hss_features_row(hss *h, long long page, int op, uint64_t npages, int flags, int raw, void *row);

typedef struct hss_pend { long long step; double pen; } hss_pend; /* a queued move: decision step, penalty term */

/* What the env keeps besides the HSS: the migration candidate and the FIFO of queued moves. */
typedef struct hss_env {
    long long cand;       /* current migration candidate, -1 if none */
    int cand_dev;         /* its device when it was offered (the agent's "stay") */
    uint64_t moved_seen;  /* executed + stale moves already reported */
    uint64_t evict_seen;  /* evictions already reported */
    double delay_seen;    /* migration delay (us) already reported */
    hss_pend *pend;       /* ring: the moves queued and not yet run, oldest first */
    size_t pend_head, pend_len, pend_cap;
} hss_env;

typedef struct hss_env_out {
    double latency;    /* of the request finished */
    double delay;      /* migration delay the moves run in this step added (0 if none ran) */
    long long evicted; /* pages evicted by this step */
    size_t ran;        /* FIFO entries of the moves run (or dropped as stale): take them with hss_env_pop */
    int executed;      /* whether any move ran or was dropped */
    int needs;         /* the next request needs a placement */
} hss_env_out;

void hss_env_free(hss_env *e);
/* The first request of an episode: forget the reports and the FIFO, begin it, pick a candidate
 * (when `scan`); writes both observation rows (NULL: not wanted). */
int hss_env_begin(hss *h, hss_env *e, double t, int op, uint64_t offset, uint64_t size, int scan, int flags,
                  int raw, void *obs_p, void *obs_m);
/* One step: finish the pending request on `place` (any value when it needs none), queue the
 * candidate's move to `move` (-1: none; the device it was offered on: stay); then, when `next`
 * (else the episode ends), begin the request (t, op, offset, size), pick the next candidate and
 * write the observation rows (NULL: not wanted). A queued move joins the FIFO as (`step`,
 * 1/acc_intr + 1/migr_intr of its page). */
int hss_env_step(hss *h, hss_env *e, int place, int move, int next, double t, int op, uint64_t offset,
                 uint64_t size, int scan, int flags, int raw, long long step, void *obs_p, void *obs_m,
                 hss_env_out *out);
hss_pend hss_env_pop(hss_env *e);  /* the FIFO's oldest entry (only after a step reported it ran) */
int hss_page_device(hss *h, long long page); /* as the curr_dev feature gives it: home if never placed */

/* ---------------------------------------------------------------- batches */

#define HSS_VEC_PAIR 0       /* both agents act */
#define HSS_VEC_PLACEMENT 1  /* the placement agent learns; no migration */
#define HSS_VEC_MIGRATION 2  /* the migration agent learns; placement on a fixed device */

/* One env of a batch: its HSS and env state (borrowed), its episode and its reward state. */
typedef struct hss_vec_slot {
    hss *h;
    hss_env *e;
    const double *t;              /* the episode's requests (borrowed), [end] */
    const uint8_t *op;
    const int64_t *off, *size;
    long long i, end;             /* index of the request observed now; requests in the episode */
    double *lat;                  /* the episode's latencies, [nlat] (borrowed) */
    long long nlat;
    int needs;                    /* the request observed now needs a placement */
    int flags, scan, place_dev;   /* features; migration on; MIGRATION mode's placement device */
    double ref_us, penalty;       /* reward parameters (the env's) */
    int reward_n, reward_x;
    double *exe;                  /* eq. 3: penalty terms of the moves run since the last window began */
    size_t exe_len, exe_cap;
    int window_left;              /* eq. 3: latencies still to average in the open window */
    double window_sum, window_pen;
} hss_vec_slot;

typedef struct hss_vec_pool hss_vec_pool;

typedef struct hss_vec {
    int n, mode, nfeat, raw;
    hss_vec_slot *s;
    /* the arrays of a step (one entry or row per env; the rows are nfeat wide, float32 or int64) */
    const int64_t *act_p, *act_m; /* actions (only the learner's in a single-agent mode) */
    const uint8_t *skip;          /* nonzero: not stepped (reset after this call) */
    void *obs_p, *obs_m;          /* observations (only the learner's in a single-agent mode) */
    double *rew_p, *rew_m;
    uint8_t *trunc;               /* the episode ended (truncation: the trace ran out) */
    uint8_t *acting_p, *acting_m; /* PAIR mode: whether each agent decides the next step */
    hss_vec_pool *pool;           /* threads, when more than one */
    int nthreads;
} hss_vec;

/* An empty batch of n slots (reset each with hss_vec_slot_clear before use); HSS_ENOMEM. */
int hss_vec_init(hss_vec *v, int n, int mode, int nfeat, int raw);
void hss_vec_free(hss_vec *v);
void hss_vec_slot_clear(hss_vec_slot *s); /* a new episode: empty reward state (keeps its buffer) */
/* Step every slot not skipped, the threads taking a few slots at a time. Returns HSS_OK or an
 * error (*bad: the slot that failed; other slots may have been stepped). */
int hss_vec_step(hss_vec *v, int *bad);
/* Use `nthreads` threads (the caller's included) for the steps: HSS_OK, HSS_EINVAL (< 1, or more
 * than one where threads are not built in) or HSS_ENOMEM. */
int hss_vec_set_threads(hss_vec *v, int nthreads);

#endif
