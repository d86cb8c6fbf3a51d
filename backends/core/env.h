/* The HSS environment in C: the observation features and one env's step (hss_env_*).
 *
 * hss_env_step is what one step of hss_gym.envs.hss.env.HSSParallelEnv does to the simulator:
 * finish the pending request on the placement agent's device, queue the migration agent's move
 * of the candidate page, begin the next request, pick the next candidate and write both agents'
 * observations. The binding's HSS.env_step (module.c) is this with Python arguments (the rewards
 * are then computed in Python); the batched envs of vec.h step each env with it too.
 *
 * The feature table (names, order, bins) is defined here only: hss_gym/envs/hss/features.py reads it
 * through the binding (feature_layout).
 */
#ifndef HSS_ENV_H
#define HSS_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "hss.h"

/* Feature flags (the env's `_sibyl`): Sibyl's six features (else Harmonia's), the free-space bins
 * of room_feature="fits" (else "fraction"), with FEAT_FITS room_feature="binary". */
#define HSS_FEAT_SIBYL 1
#define HSS_FEAT_FITS 2
#define HSS_FEAT_BINARY 4
#define HSS_FEAT_MAX (HSS_MAX_DEV + 8)

typedef struct hss_feature_desc {
    char name[16];
    int bins;
} hss_feature_desc;

/* How many features these flags give with `ndev` devices (1..HSS_MAX_DEV). */
int hss_feature_count(int ndev, int flags);
/* Each feature's name and number of bins, in observation order, into out[hss_feature_count]. */
int hss_feature_layout(int ndev, int flags, hss_feature_desc *out);
/* Bins of `page`'s features (-1 or an unplaced page: a page never seen) for a request of type
 * `op` and `npages` pages, and each feature's number of bins; returns the number of features. */
int hss_features(hss *h, long long page, int op, uint64_t npages, int flags, int *bins, int *nbins);
/* The same written as an observation row: float32 scaled to [0, 1] (`raw` = 0) or int64 bins. */
int hss_features_row(hss *h, long long page, int op, uint64_t npages, int flags, int raw, void *row);

typedef struct hss_pend { long long step; double pen; } hss_pend; /* a queued move: decision step, penalty term */

/* What the env keeps besides the HSS: the migration candidate, the FIFO of queued moves and the
 * episode's latencies. Zero it before first use. */
typedef struct hss_env {
    long long cand;       /* current migration candidate, -1 if none */
    int cand_dev;         /* its device when it was offered (the agent's "stay") */
    uint64_t moved_seen;  /* executed + stale moves already reported */
    uint64_t evict_seen;  /* evictions already reported */
    double delay_seen;    /* migration delay (us) already reported */
    hss_pend *pend;       /* ring: the moves queued and not yet run, oldest first */
    size_t pend_head, pend_len, pend_cap;
    double *lat;          /* the episode's latencies, [nlat] (borrowed; NULL: not kept) */
    long long nlat;
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
 * (when `scan`); writes both observation rows (NULL: not wanted). Set e->lat before. */
int hss_env_begin(hss *h, hss_env *e, double t, int op, uint64_t offset, uint64_t size, int scan, int flags,
                  int raw, void *obs_p, void *obs_m);
/* One step: finish the pending request on `place` (any value when it needs none) and write its
 * latency to e->lat[step] (when 0 <= step < nlat), queue the candidate's move to `move` (-1:
 * none; the device it was offered on: stay); then, when `next` (else the episode ends), begin
 * the request (t, op, offset, size), pick the next candidate and write the observation rows
 * (NULL: not wanted). A queued move joins the FIFO as (`step`, 1/acc_intr + 1/migr_intr of its
 * page). HSS_EINVAL without a pending request. */
int hss_env_step(hss *h, hss_env *e, int place, int move, int next, double t, int op, uint64_t offset,
                 uint64_t size, int scan, int flags, int raw, long long step, void *obs_p, void *obs_m,
                 hss_env_out *out);
hss_pend hss_env_pop(hss_env *e);  /* the FIFO's oldest entry (only after a step reported it ran) */
int hss_page_device(hss *h, long long page); /* as the curr_dev feature gives it: home if never placed */

#endif
