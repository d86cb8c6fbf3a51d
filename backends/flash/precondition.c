/* The flash SSD model's preconditioning (fl_precondition, see flash.h): the FTL state of a device
 * filled before the first request, as after random overwrites under greedy GC. */
#include "ftl.h"

#include <math.h>

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Valid pages of block b (of `used` written blocks) in a plane holding cnt valid pages: the valid
 * fraction rises linearly across the blocks (the steady state of greedy GC under uniform random
 * writes spans the victims' low valid count up to full blocks), with mean cnt / (used * G); the
 * integral of that profile over [b, b+1) rounded so that the blocks sum to cnt exactly. The last
 * block takes any rounding remainder. */
static uint32_t block_target(uint32_t cnt, uint32_t b, int used, uint32_t G)
{
    if ((int)b >= used - 1) return G;
    double m = (double)cnt / ((double)used * G);
    if (m <= 0) return 0;
    double lo = m >= 0.5 ? 2 * m - 1 : 0, hi = m >= 0.5 ? 1 : 2 * m;
    double x0 = (double)b / used, x1 = (double)(b + 1) / used;
    double F0 = lo * x0 + (hi - lo) * x0 * x0 / 2, F1 = lo * x1 + (hi - lo) * x1 * x1 / 2;
    uint32_t want = (uint32_t)(llround(F1 / m * cnt) - llround(F0 / m * cnt));
    return want > G ? G : want;
}

/* MQSim's Utils::Combination_count, as a double */
static double comb_count(double n, double k)
{
    if (k > n) return 0;
    if (k * 2 > n) k = n - k;
    if (k == 0) return 1;
    double r = n;
    for (int i = 2; i <= k; ++i) { r *= (n - i + 1); r /= i; }
    return r;
}

/* The steady-state distribution of valid pages per block under uniform random writes and greedy
 * GC, as MQSim's FTL::Perform_precondition estimates it (Van Houdt's mean-field model of d-choices
 * GC with d = 30, MQSim's Utils::Euler_estimation, its arithmetic kept): dist[0..G]. */
static void mqsim_steady_state(int G, double rho, double *dist)
{
    double *w0 = malloc((size_t)(G + 2) * sizeof(double)), *w = calloc((size_t)G + 2, sizeof(double));
    if (!w0 || !w) { free(w0); free(w); for (int i = 0; i <= G; i++) dist[i] = i == G; return; }
    for (int i = 0; i <= G; i++) dist[i] = comb_count(G, i) * pow(rho, i) * pow(1 - rho, G - i);
    w0[0] = w[0] = 1;
    for (int i = 1; i <= G + 1; i++) { w0[i] = 0; for (int j = i; j <= G; j++) w0[i] += dist[j]; }
    const double h = 0.001, max_diff = 1e-10;
    double diff = 1e14;
    for (int itr = 0; itr < 10000 && diff > max_diff; itr++) {
        double sigma = 0;
        for (int j = 1; j <= G; j++) sigma += pow(w0[j], 30);
        for (int i = 1; i < G; i++)
            w[i] = w0[i] + h * (1 - pow(w0[i], 30) - (G - sigma) * ((i * (w0[i] - w0[i + 1])) / (G * rho)));
        diff = fabs(w[0] - w0[0]);
        for (int i = 1; i <= G; i++) if (fabs(w[i] - w0[i]) > diff) diff = fabs(w[i] - w0[i]);
        for (int i = 1; i <= G + 1; i++) w0[i] = w[i];
    }
    for (int i = 0; i <= G; i++) dist[i] = w0[i] - w0[i + 1];
    free(w0); free(w);
}

/* blocks of a bucket: MQSim's (unsigned int)(probability * goal), 0 for a negative or NaN product
 * (a rho >= 1 makes the distribution meaningless; the blocks then do not fit, an error) */
static uint32_t bucket_blocks(double p, uint32_t goal)
{
    double x = p * (double)goal;
    return x > 0 && x < 4294967295.0 ? (uint32_t)x : 0;
}

/* MQSim's Address_Mapping_Unit_Page_Level::Allocate_address_for_preconditioning for one stream in
 * one plane: the valid-page counts of the blocks (out[0..n)) that hold its `assigned` pages, from
 * the steady-state distribution shifted to their mean over the stream's share of the plane's blocks
 * (blocks of 0 valid pages included: MQSim consumes them too); adj is scratch for G + 1 doubles.
 * Returns n, or -1 when they do not fit in max_blocks. */
static int mqsim_blocks(const double *dist, int G, int B, int thr, double share, uint32_t assigned,
                        double *adj, uint32_t *out, int max_blocks)
{
    uint32_t goal = (uint32_t)((double)(B - thr / 2) * share);
    if (goal == 0) return assigned ? -1 : 0;
    double model_avg = 0;
    for (int i = 0; i <= G; i++) { model_avg += dist[i] * i / G; adj[i] = dist[i]; }
    double real_avg = (double)assigned / ((double)goal * G);
    if (fabs(model_avg - real_avg) * G > 0.9999) {
        int disp = (int)((real_avg - model_avg) * G);
        if (disp > 0) {
            for (int i = 0; i < disp && i < G; i++) adj[i] = 0;
            for (int i = disp; i < G; i++) adj[i] = dist[i - disp];
        } else {
            disp = -disp;
            for (int i = 0; i < G - disp; i++) adj[i] = dist[i + disp];
            for (int i = G - disp > 0 ? G - disp : 0; i < G; i++) adj[i] = 0;
        }
    }
    uint64_t total = 0;
    for (int v = G; v >= 0; v--) total += (uint64_t)v * bucket_blocks(adj[v], goal);
    uint64_t need = assigned > total ? assigned - total : 0, left = assigned;
    uint32_t remaining = goal;
    int n = 0;
    for (int v = G; v >= 0; v--) {
        uint32_t k = bucket_blocks(adj[v], goal);
        if (k > 0 && need > 0 && v > 0) { k += (uint32_t)(need / (uint64_t)v + (need % (uint64_t)v ? 1 : 0)); need = 0; }
        if (k <= remaining) remaining -= k; else { k = remaining; remaining = 0; }
        for (uint32_t b = 0; b < k; b++) {
            if (left < (uint64_t)v) v = (int)left;  /* MQSim lowers its loop variable here */
            if (n >= max_blocks) return -1;
            out[n++] = (uint32_t)v;
            left -= (uint64_t)v;
        }
    }
    return left ? -1 : n;
}

int fl_precondition(fl_sim *s, double valid, const uint8_t *sel, int layout, const int64_t *rlo,
                    const int64_t *rhi, const int32_t *rstream, int nr, char *err, size_t errlen)
{
    for (int i = 0; i < nr; i++) {
        if (rstream[i] < 0 || rstream[i] >= s->c.n_streams || rlo[i] < 0 || rhi[i] <= rlo[i]
            || (uint64_t)rhi[i] > s->logical_pages || (i && rlo[i] < rhi[i - 1])) {
            snprintf(err, errlen, "precondition range %d (pages %lld..%lld, stream %d): ranges must be sorted, "
                     "disjoint, non-empty, within the %llu logical pages, of existing streams", i, (long long)rlo[i],
                     (long long)rhi[i], rstream[i], (unsigned long long)s->logical_pages);
            return -1;
        }
    }
    if (!(valid >= 0.0 && valid <= 1.0)) { snprintf(err, errlen, "precondition must be in [0, 1] (got %g)", valid); return -1; }
    if (layout != FL_LAYOUT_LINEAR && layout != FL_LAYOUT_MQSIM) {
        snprintf(err, errlen, "precondition layout must be %d (linear) or %d (mqsim), got %d", FL_LAYOUT_LINEAR,
                 FL_LAYOUT_MQSIM, layout);
        return -1;
    }
    if (s->now != 0 || s->host_page_writes != 0) { snprintf(err, errlen, "precondition only on a fresh simulator"); return -1; }
    uint32_t np = (uint32_t)s->n_planes, G = (uint32_t)s->G, B = (uint32_t)s->B;
    /* the linear layout spreads all of a plane's pages over one sequence of blocks (O = 1); MQSim's
     * gives every stream its own blocks in each plane (O = n_streams) */
    uint32_t O = layout == FL_LAYOUT_MQSIM ? (uint32_t)s->c.n_streams : 1;
    uint64_t thr = (uint64_t)(valid * 18446744073709551615.0);
    size_t npo = (size_t)np * O;
    uint32_t *cnt = calloc(npo, sizeof(uint32_t));
    uint32_t *cur_blk = calloc(npo, sizeof(uint32_t));
    uint32_t *cur_n = calloc(npo, sizeof(uint32_t));
    uint32_t *cur_want = calloc(npo, sizeof(uint32_t));
    uint32_t *used = calloc(np, sizeof(uint32_t));
    uint32_t nall = (uint32_t)s->n_units, C = (uint32_t)s->c.n_channels, W = (uint32_t)s->c.chips_per_channel;
    uint32_t D = (uint32_t)s->D, P = (uint32_t)s->P;
    uint32_t *unit_of_idx = malloc(nall * sizeof(uint32_t));
    /* MQSim layout: per (plane, stream) its blocks' valid counts at tgt[cur_blk .. cur_want) */
    uint32_t *tgt = layout == FL_LAYOUT_MQSIM ? malloc((size_t)np * B * sizeof(uint32_t)) : NULL;
    double *dist = layout == FL_LAYOUT_MQSIM ? malloc((size_t)(G + 1) * 2 * sizeof(double)) : NULL;
    uint64_t *span = layout == FL_LAYOUT_MQSIM ? calloc(O, sizeof(uint64_t)) : NULL;
    uint64_t *owned = layout == FL_LAYOUT_MQSIM ? calloc(O, sizeof(uint64_t)) : NULL;
    int rc = -1;
    if (!cnt || !cur_blk || !cur_n || !cur_want || !used || !unit_of_idx
        || (layout == FL_LAYOUT_MQSIM && (!tgt || !dist || !span || !owned))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* CWDP plane of consecutive lpns: an odometer (unit index fastest, then die, then plane) */
    for (uint32_t i = 0; i < nall; i++) unit_of_idx[i] = (i % C) * W + i / C;
    uint32_t o_u, o_d, o_p;
#define ODO_RESET() (o_u = o_d = o_p = 0)
#define ODO_PLANE() ((unit_of_idx[o_u] * D + o_d) * P + o_p)
#define ODO_NEXT() (++o_u == nall ? (o_u = 0, ++o_d == D ? (o_d = 0, ++o_p == P ? (o_p = 0) : 0) : 0) : 0)
#define SELECTED(l) (sel ? (sel[(l) >> 3] >> ((l) & 7)) & 1 \
                     : (valid >= 1.0 || (thr && (splitmix(&(uint64_t){s->c.seed * 0x9E37ull + (l)}) <= thr))))
    /* a page of a stream's range goes where CWDP over that stream's units puts it (the stream's own
     * data on its own units); other pages are striped over all units */
    int ri = 0, owner = 0;
#define PRE_PLANE(l, p) do { \
        while (ri < nr && (int64_t)(l) >= rhi[ri]) ri++; \
        if (ri < nr && (int64_t)(l) >= rlo[ri]) { \
            const stream_t *st_ = &s->streams[rstream[ri]]; \
            uint32_t nu_ = (uint32_t)st_->n_units, l_ = (uint32_t)(l); \
            p = ((uint32_t)st_->units[l_ % nu_] * D + (l_ / nu_) % D) * P + (l_ / (nu_ * D)) % P; \
            owner = rstream[ri]; \
        } else { p = ODO_PLANE(); owner = 0; } \
    } while (0)
#define SLOT(p) ((size_t)(p) * O + (O > 1 ? (uint32_t)owner : 0))
    ODO_RESET();
    for (uint64_t l = 0; l < s->logical_pages; l++, ODO_NEXT()) {
        if (span) { uint32_t any; PRE_PLANE(l, any); (void)any; span[owner]++; }
        if (!SELECTED(l)) continue;
        uint32_t p;
        PRE_PLANE(l, p);
        cnt[SLOT(p)]++;
        if (owned) owned[owner]++;
    }
    if (layout == FL_LAYOUT_LINEAR) {
        /* free blocks left: the GC threshold plus one per stream (each stream opens its own frontier
         * block in a plane before GC starts), fewer when the valid data needs them (GC is then due) */
        uint32_t max_cnt = 0;
        for (uint32_t p = 0; p < np; p++) if (cnt[p] > max_cnt) max_cnt = cnt[p];
        int u = s->B - (s->gc_thr_blocks + s->c.n_streams);
        int need = (int)((max_cnt + G - 1) / G) + 1;
        if (u < need) u = need < s->B ? need : s->B - 1;
        for (uint32_t p = 0; p < np; p++) {
            if (cnt[p] > (uint64_t)u * G) {
                snprintf(err, errlen, "precondition %g needs %u valid pages in a plane, more than the %llu that fit "
                         "beside one free block", valid, cnt[p], (unsigned long long)u * G);
                goto out;
            }
            used[p] = (uint32_t)u;
            /* block i of a plane holds c_i valid pages, c_i spread linearly (steady state of greedy GC
             * under random writes: from the victims' low valid count up to full), summing to the count */
            cur_want[p] = block_target(cnt[p], 0, u, G);
        }
    } else {
        /* MQSim: per stream, the steady-state distribution for its occupancy (rho as MQSim computes
         * it), then per plane the stream's blocks over its share of the plane */
        double *adj = dist + G + 1;
        double last_rho = -1;
        for (uint32_t o = 0; o < O; o++) {
            if (!owned[o]) continue;
            double rho = (double)owned[o] / (double)span[o] * (1 - s->c.op_ratio)
                         / (1 - (double)s->gc_thr_blocks / (double)B);
            if (rho != last_rho) { mqsim_steady_state((int)G, rho, dist); last_rho = rho; }
            for (uint32_t p = 0; p < np; p++) {
                uint32_t sharers = 0;
                for (uint32_t q = 0; q < O; q++) sharers += cnt[(size_t)p * O + q] > 0;
                size_t k = (size_t)p * O + o;
                if (!cnt[k]) continue;
                int n = mqsim_blocks(dist, (int)G, (int)B, s->gc_thr_blocks, 1.0 / sharers, cnt[k], adj,
                                     tgt + (size_t)p * B + used[p], (int)(B - 1 - used[p]));
                if (n < 0) {
                    snprintf(err, errlen, "precondition: stream %u's %u valid pages in plane %u do not fit in its "
                             "share of the plane's blocks as MQSim lays them out (MQSim stops there too: \"not "
                             "possible to assign PPA to all LPAs\"); a lower occupancy or precondition_layout="
                             "\"linear\" places them", o, cnt[k], p);
                    goto out;
                }
                cur_blk[k] = used[p];
                cur_want[k] = used[p] + (uint32_t)n;
                for (uint32_t b = used[p]; b < cur_want[k]; b++) s->blk_owner[p * B + b] = (uint8_t)o;
                used[p] += (uint32_t)n;
            }
        }
    }
    ODO_RESET();
    ri = 0;
    for (uint64_t l = 0; l < s->logical_pages; l++, ODO_NEXT()) {
        if (!SELECTED(l)) continue;
        uint32_t p;
        PRE_PLANE(l, p);
        size_t k = SLOT(p);
        uint32_t b;
        if (layout == FL_LAYOUT_LINEAR) {
            while (cur_n[k] >= cur_want[k]) { /* close the block, open the next */
                cur_blk[k]++;
                cur_n[k] = 0;
                cur_want[k] = block_target(cnt[k], cur_blk[k], (int)used[p], G);
            }
            b = cur_blk[k];
        } else {
            while (cur_n[k] >= tgt[(size_t)p * B + cur_blk[k]]) { cur_blk[k]++; cur_n[k] = 0; }
            b = cur_blk[k];
        }
        uint32_t gb = p * B + b;
        if (cur_n[k] == 0) s->blk_owner[gb] = (uint8_t)owner; /* GC of the block is charged to it */
        uint32_t ppn = gb * G + cur_n[k]++;
        l2p_set(s, l, ppn);
        p2l_set(s, ppn, (uint32_t)l);
        if (s->cbits) cstat_set(s, l, (1u << s->cbits) - 1);
        s->blk_valid[gb]++;
        s->units[unit_of_plane(s, p)].valid_pages++;
    }
    /* blocks 0..used-1 are written (full); the rest stay free */
    for (uint32_t p = 0; p < np; p++) {
        plane_t *pl = &s->planes[p];
        for (uint32_t b = 0; b < used[p]; b++) s->blk_state[p * B + b] = BLK_FULL;
        pl->n_free = 0;
        for (int b = s->B - 1; b >= (int)used[p]; b--) s->free_stack[(size_t)p * s->B + (size_t)(pl->n_free++)] = (uint32_t)b;
        s->units[unit_of_plane(s, p)].free_blocks -= (int)used[p];
    }
    for (uint32_t p = 0; p < np; p++) gc_check(s, p); /* planes left below the threshold start GC */
    rc = 0;
#undef ODO_RESET
#undef ODO_PLANE
#undef ODO_NEXT
#undef PRE_PLANE
#undef SELECTED
#undef SLOT
out:
    free(unit_of_idx); free(cnt); free(cur_blk); free(cur_n); free(cur_want); free(used);
    free(tgt); free(dist); free(span); free(owned);
    return rc;
}
