/* A batch of HSS envs stepped in one call (hss_vec_*), each with env.h's hss_env_step.
 *
 * hss_vec steps N envs at once over shared arrays (one row per env) and computes the
 * rewards too (Sibyl's L_ref / latency for placement, Harmonia's eq. 3 for migration), the same
 * floating-point operations in the same order as the Python envs, so the results are identical.
 * Three modes: both agents (hss/Harmonia-v0), or one learner with the other agent fixed, as
 * hss_gym.envs.hss.single.SingleAgentEnv does (hss/Placement-v0, hss/Migration-v0): the learner's
 * step then runs on through the requests on which it has no decision. Episode starts (resets)
 * stay in Python: a slot is (re)loaded after its env was reset there; a slot flagged in `skip`
 * is left alone for that call (Gymnasium's next-step autoreset). The batch can be split over
 * threads (pthreads): each env is touched by one thread only, nothing is shared between envs.
 */
#ifndef HSS_VEC_H
#define HSS_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "env.h"

#define HSS_VEC_PAIR 0       /* both agents act */
#define HSS_VEC_PLACEMENT 1  /* the placement agent learns; no migration */
#define HSS_VEC_MIGRATION 2  /* the migration agent learns; placement on a fixed device */

/* One env of a batch: its HSS and env state (borrowed; the env keeps the episode's latencies),
 * its episode and its reward state. */
typedef struct hss_vec_slot {
    hss *h;
    hss_env *e;
    const double *t;              /* the episode's requests (borrowed), [end] */
    const uint8_t *op;
    const int64_t *off, *size;
    long long i, end;             /* index of the request observed now; requests in the episode */
    int needs;                    /* the request observed now needs a placement */
    int flags, scan, place_dev;   /* features; migration on; MIGRATION mode's placement device */
    double ref_us, penalty;       /* reward parameters (the env's) */
    int reward_n, reward_x;
    int latency_reward;           /* placement reward -latency / ref_us on every step (else ref_us / latency) */
    double *exe;                  /* eq. 3: penalty terms of the moves run since the last window began */
    long long *exe_step;          /* ... and their decision steps */
    size_t exe_len, exe_cap, step_cap;
    int window_left;              /* eq. 3: latencies still to average in the open window */
    double window_sum, window_pen;
    long long *ran_step;          /* decision steps of the moves the last step ran (or dropped) */
    size_t ran_len, ran_cap;
    long long *credit;            /* decision steps the open (or just closed) window credits */
    size_t credit_len, credit_cap;
    int credited;                 /* the last step closed a window: its reward credits `credit` */
    hss_pf pf;                    /* the prefetch of the next request's lookup (vec.c), this call */
    uint64_t pf_call;             /* ... valid in the call it counts only */
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
    uint64_t calls;               /* hss_vec_step calls so far (hss_vec_slot.pf_call) */
} hss_vec;

/* An empty batch of n slots (reset each with hss_vec_slot_clear before use); HSS_ENOMEM. */
int hss_vec_init(hss_vec *v, int n, int mode, int nfeat, int raw);
void hss_vec_free(hss_vec *v);
void hss_vec_slot_clear(hss_vec_slot *s); /* a new episode: empty reward state (keeps its buffers) */
void hss_vec_slot_free(hss_vec_slot *s);  /* its buffers */
/* One step of a slot in two halves, for a caller that measures the latency itself (the real
 * backend): hss_slot_advance steps the simulator (hss_env_step with the slot's next request) and
 * hss_slot_rewards computes both rewards from `latency` and moves the slot on to the next request.
 * The reward of the placement agent: ref_us / latency when the request needed a placement, else 0
 * (latency_reward: -latency / ref_us on every step); of the migration agent: eq. 3. */
int hss_slot_advance(hss_vec_slot *s, int raw, int place, int move, void *row_p, void *row_m, hss_env_out *o);
int hss_slot_rewards(hss_vec_slot *s, const hss_env_out *o, double latency, double *rp, double *rm);
/* Step every slot not skipped, the threads taking a few slots at a time. Returns HSS_OK or an
 * error (*bad: the slot that failed; other slots may have been stepped). */
int hss_vec_step(hss_vec *v, int *bad);
/* Use `nthreads` threads (the caller's included) for the steps: HSS_OK, HSS_EINVAL (< 1, or more
 * than one where threads are not built in) or HSS_ENOMEM. */
int hss_vec_set_threads(hss_vec *v, int nthreads);

#endif
