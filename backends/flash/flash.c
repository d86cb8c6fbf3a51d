/* The flash SSD model's simulation core; see flash.h for what it models and docs/flash-model.md for
 * the modelling choices. This unit is the model's top: construction, the requests (submission,
 * admission, completion and the latency log), the event loop and its handlers, control and
 * counters. It hands a request's pages to the DRAM data cache (cache.c) when that is on, else
 * straight to the FTL (ftl.c: event queue, mapping, GC, chip and channel scheduling), which the
 * cache uses too; neither calls back up here (see ftl.h).
 * Timing follows MQSim's (CMU-SAFARI/MQSim, FAST'18) semantics by design:
 * - a chip accepts a new command only when idle (no die busy, no read data waiting to go out), and
 *   a command targets one die with up to planes_per_die transactions on distinct planes and the
 *   same page offset (multi-plane);
 * - the channel bus carries command/address cycles and data-in (writes) and data-out (reads); the
 *   array operation (read, program, erase) holds only the chip; a read completes when its data
 *   has crossed the bus, a write when the program finishes;
 * - when the bus frees, waiting read data-outs go first (user before GC), then chips are polled
 *   round-robin; a chip serves GC reads/writes/erases before user transactions (non-preemptive
 *   GC), user reads before user writes, and higher priority classes first;
 * - a plane starts GC when its free blocks fall below the threshold: greedy victim (fewest valid
 *   pages), valid pages read out and programmed into the GC frontier of the same plane, erase;
 * - with program/erase suspension on (MQSim's TSU_Priority_OutOfOrder / NVM_PHY_ONFI_NVDDR2 with
 *   their fall-through and bookkeeping bugs fixed, see docs/flash-model.md): a read finding its chip
 *   in a program (erase) array operation, or a program finding it in an erase, with no command
 *   already suspended and at least the preferred time of the operation left (reckoned from the
 *   chip's expected finish, which is not moved by a resume), is issued at once. On the operation's
 *   die the operation is suspended: the new command's bus phase first carries the suspend command
 *   and the suspend time, and the operation resumes with its remaining time when the chip is idle
 *   again. On another die it runs on alongside (die interleaving, no suspend cost);
 * - with the DRAM data cache on (MQSim's Data_Cache_Manager_Flash_Advanced): writes absorbed in DRAM
 *   and written back under MQSim's back pressure, read hits served from DRAM, one DRAM channel with
 *   MQSim's access-time estimate (see cache.c).
 * Time is kept in integer nanoseconds. */
#include "cache.h"
#include "ftl.h"

#include <math.h>

/* ------------------------------------------------------------------ helpers */

static int32_t rq_alloc(fl_sim *s)
{
    if (s->rq_free < 0) {
        int32_t old = s->rq_cap;
        s->rq = grow(s->rq, sizeof(req_t), &s->rq_cap, old + 1);
        for (int32_t i = s->rq_cap - 1; i >= old; i--) { s->rq[i].next = s->rq_free; s->rq_free = i; }
    }
    int32_t i = s->rq_free;
    s->rq_free = s->rq[i].next;
    s->rq[i].next = -1;
    s->rq_live++;
    return i;
}

/* Room for n more requests in the pool, and in the latency log for all requests not finished:
 * grown at once to what a submission needs (at least doubled), not at each power of 2 on the way
 * (the pool's free list would touch, so fault in, the whole doubled array, and each step of the log
 * copies it). */
static void rq_reserve(fl_sim *s, int32_t n)
{
    int32_t need = s->rq_live + n;
    if (need > s->rq_cap) {
        int32_t old = s->rq_cap, cap = need > 2 * old ? need : 2 * old;
        req_t *q = realloc(s->rq, (size_t)cap * sizeof(req_t));
        if (!q) { fprintf(stderr, "flash: out of memory\n"); abort(); }
        s->rq = q;
        s->rq_cap = cap;
        for (int32_t i = cap - 1; i >= old; i--) { s->rq[i].next = s->rq_free; s->rq_free = i; }
    }
    size_t lneed = s->lat_n + (size_t)need;
    if (lneed > s->lat_cap) {
        size_t cap = lneed > 2 * s->lat_cap ? lneed : 2 * s->lat_cap;
        s->lat = realloc(s->lat, cap * sizeof(double));
        s->dev_lat = realloc(s->dev_lat, cap * sizeof(double));
        s->lat_stream = realloc(s->lat_stream, cap * sizeof(uint16_t));
        if (!s->lat || !s->dev_lat || !s->lat_stream) { fprintf(stderr, "flash: out of memory\n"); abort(); }
        s->lat_cap = cap;
    }
}

/* llround(t_us * 1000), the time of an arrival in ns (t_us >= 0, finite), without the call where
 * the product is below 2^52: its integer part is exact, and so is its fraction (x - floor(x)) */
static inline int64_t arrival_ns(double t_us)
{
    double x = t_us * 1000.0;
    if (!(x < 4503599627370496.0)) return (int64_t)llround(x);
    int64_t r = (int64_t)x;
    return r + (x - (double)r >= 0.5);
}

/* ------------------------------------------------------------------ construction */

/* the 64-bit words of the bitmaps of the l2p's and cstat's 4 KiB that were written (l2p_wr, cstat_wr) */
static size_t l2p_wr_words(const fl_sim *s) { return (size_t)(s->logical_pages / 1024 / 64 + 1); }
static size_t cstat_wr_words(const fl_sim *s)
{
    return s->cbits ? (size_t)((s->logical_pages * (uint64_t)s->cbits / 8 + 8) / 4096 / 64 + 1) : 0;
}

static int cfg_error(char *err, size_t errlen, const char *msg, const char *field, double value)
{
    snprintf(err, errlen, "%s: %s (got %g)", field, msg, value);
    return -1;
}

static int check_cfg(const fl_config *c, char *err, size_t errlen)
{
    if (c->n_channels < 1 || c->n_channels > 1024) return cfg_error(err, errlen, "must be in 1..1024", "n_channels", c->n_channels);
    if (c->chips_per_channel < 1 || c->chips_per_channel > 1024) return cfg_error(err, errlen, "must be in 1..1024", "chips_per_channel", c->chips_per_channel);
    if ((int64_t)c->n_channels * c->chips_per_channel > 1024) return cfg_error(err, errlen, "n_channels * chips_per_channel must be <= 1024", "n_units", (double)c->n_channels * c->chips_per_channel);
    if (c->dies_per_chip < 1 || c->dies_per_chip > 64) return cfg_error(err, errlen, "must be in 1..64", "dies_per_chip", c->dies_per_chip);
    if (c->planes_per_die < 1 || c->planes_per_die > FL_MAX_PLANES) return cfg_error(err, errlen, "must be in 1..8", "planes_per_die", c->planes_per_die);
    if (c->blocks_per_plane < 4) return cfg_error(err, errlen, "must be >= 4", "blocks_per_plane", c->blocks_per_plane);
    if (c->pages_per_block < 1 || c->pages_per_block > 65535) return cfg_error(err, errlen, "must be in 1..65535", "pages_per_block", c->pages_per_block);
    if (c->page_size < 512 || c->page_size % 512) return cfg_error(err, errlen, "must be a positive multiple of 512 bytes", "page_size", c->page_size);
    if (!(c->op_ratio > 0.0 && c->op_ratio < 0.9)) return cfg_error(err, errlen, "must be in (0, 0.9)", "op_ratio", c->op_ratio);
    if (!(c->gc_threshold > 0.0 && c->gc_threshold < 0.5)) return cfg_error(err, errlen, "must be in (0, 0.5)", "gc_threshold", c->gc_threshold);
    if (c->read_ns <= 0) return cfg_error(err, errlen, "must be > 0", "read_us", (double)c->read_ns / 1000);
    if (c->program_ns <= 0) return cfg_error(err, errlen, "must be > 0", "program_us", (double)c->program_ns / 1000);
    if (c->erase_ns <= 0) return cfg_error(err, errlen, "must be > 0", "erase_us", (double)c->erase_ns / 1000);
    if (!(c->channel_mtps > 0)) return cfg_error(err, errlen, "must be > 0", "channel_mtps", c->channel_mtps);
    if (c->channel_width < 1 || c->channel_width > 64) return cfg_error(err, errlen, "must be in 1..64 bytes", "channel_width_bytes", c->channel_width);
    if (c->n_streams < 1 || c->n_streams > FL_MAX_STREAMS) return cfg_error(err, errlen, "must be in 1..64", "n_streams", c->n_streams);
    for (int i = 0; i < c->n_streams; i++)
        if (c->queue_depth[i] < 1) return cfg_error(err, errlen, "must be >= 1", "queue_depth", c->queue_depth[i]);
    double pages = (double)c->n_channels * c->chips_per_channel * c->dies_per_chip * c->planes_per_die
                   * c->blocks_per_plane * c->pages_per_block;
    if (pages >= 4294967295.0) return cfg_error(err, errlen, "physical pages must be < 2^32 (use a larger page or scale)", "geometry", pages);
    int thr = (int)(c->gc_threshold * c->blocks_per_plane);
    if (thr + 2 >= c->blocks_per_plane) return cfg_error(err, errlen, "leaves no blocks for data; raise blocks_per_plane", "gc_threshold", c->gc_threshold);
    if (c->susp_program_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_program_us", (double)c->susp_program_ns / 1000);
    if (c->susp_erase_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_erase_us", (double)c->susp_erase_ns / 1000);
    if (c->susp_program_read_min_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_program_for_read_min_us", (double)c->susp_program_read_min_ns / 1000);
    if (c->susp_erase_read_min_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_erase_for_read_min_us", (double)c->susp_erase_read_min_ns / 1000);
    if (c->susp_erase_write_min_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_erase_for_write_min_us", (double)c->susp_erase_write_min_ns / 1000);
    if (c->cache_mode < 0 || c->cache_mode > (FL_CACHE_WRITE | FL_CACHE_READ)) return cfg_error(err, errlen, "must be 0..3", "cache_mode", c->cache_mode);
    if (c->cache_mode) {
        int parts = c->cache_partitioned ? c->n_streams : 1;
        if (c->page_size > 32768) return cfg_error(err, errlen, "must be <= 32768 bytes with the data cache on (64 sectors)", "page_size", c->page_size);
        if (c->cache_bytes / c->page_size < parts || c->cache_bytes / c->page_size > INT32_MAX / 2)
            return cfg_error(err, errlen, "must hold at least one page per partition (and < 2^30 pages)", "cache_capacity_bytes", (double)c->cache_bytes);
        if (c->dram_row_bytes < 1) return cfg_error(err, errlen, "must be >= 1", "cache_dram_row_bytes", c->dram_row_bytes);
        if (c->dram_burst_bytes < 1) return cfg_error(err, errlen, "must be >= 1", "cache_dram_burst_bytes", c->dram_burst_bytes);
        if (!(c->dram_mtps > 0) || !isfinite(c->dram_mtps)) return cfg_error(err, errlen, "must be > 0", "cache_dram_mtps", c->dram_mtps);
        if (c->dram_trcd_ns < 0 || c->dram_tcl_ns < 0 || c->dram_trp_ns < 0)
            return cfg_error(err, errlen, "must be >= 0", "cache_dram_trcd/tcl/trp_ns", (double)(c->dram_trcd_ns < 0 ? c->dram_trcd_ns : c->dram_tcl_ns < 0 ? c->dram_tcl_ns : c->dram_trp_ns));
    }
    return 0;
}

fl_sim *fl_new(const fl_config *cfg, char *err, size_t errlen)
{
    if (check_cfg(cfg, err, errlen) < 0) return NULL;
    fl_sim *s = calloc(1, sizeof(fl_sim));
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->c = *cfg;
    s->D = cfg->dies_per_chip; s->P = cfg->planes_per_die; s->B = cfg->blocks_per_plane; s->G = cfg->pages_per_block;
    s->n_units = cfg->n_channels * cfg->chips_per_channel;
    s->n_planes = s->n_units * s->D * s->P;
    s->n_blocks = (uint32_t)s->n_planes * (uint32_t)s->B;
    s->phys_pages = (uint64_t)s->n_blocks * (uint64_t)s->G;
    s->logical_pages = (uint64_t)((double)s->phys_pages * (1.0 - cfg->op_ratio));
    s->logical_bytes = (int64_t)s->logical_pages * cfg->page_size;
    s->gc_thr_blocks = (int32_t)(cfg->gc_threshold * s->B);
    /* at least 2: host writes leave a plane's last free block to GC, so GC must start before that */
    if (s->gc_thr_blocks < 2) s->gc_thr_blocks = 2;
    /* ONFI NV-DDR2 command/address timing, MQSim's defaults (ONFI_Channel_NVDDR2.h), in ns */
    const int64_t tCS = 20, tWC = 25, tWB = 100, tRR = 20, tDBSY = 500, tADL = 70, tWPST = 6, tWPSTH = 15, tCALS = 15;
    for (int n = 1; n <= FL_MAX_PLANES; n++) {
        s->cmd_ns[0][n] = tCS + n * 6 * tWC + (n - 1) * tDBSY + tWB + tRR;
        s->cmd_ns[1][n] = tCS + (n - 1) * (5 * tWC + tADL + tWPST + tCALS + tWB + tDBSY) + (6 * tWC + tADL + tWPST + tWPSTH + tWB);
        s->cmd_ns[2][n] = tCS + n * (4 * tWC + tWB) + (n - 1) * tDBSY;
    }
    s->op_ns[0] = cfg->read_ns; s->op_ns[1] = cfg->program_ns; s->op_ns[2] = cfg->erase_ns;
    s->susp_cmd_ns = tCS + 3 * tWC;
    s->xfer_ns_per_byte = 1000.0 / (cfg->channel_mtps * cfg->channel_width);
    int bits = 1;
    while (bits < 32 && (1ull << bits) < s->logical_pages) bits++;
    s->p2l_bits = bits;
    s->cbits = cfg->page_size > 4096 ? (cfg->page_size + 4095) / 4096 : 0;
    if (s->cbits > 8) s->cbits = 8;
    s->cstat = s->cbits ? calloc((size_t)((s->logical_pages * (uint64_t)s->cbits + 7) / 8 + 8), 1) : NULL;
    s->l2p = calloc(s->logical_pages, sizeof(uint32_t));
    s->l2p_wr = calloc(l2p_wr_words(s), sizeof(uint64_t));
    s->cstat_wr = s->cbits ? calloc(cstat_wr_words(s), sizeof(uint64_t)) : NULL;
    s->p2l = calloc((size_t)((s->phys_pages * (uint64_t)bits + 7) / 8 + 8), 1);
    s->blk_valid = calloc(s->n_blocks, sizeof(uint16_t));
    s->blk_state = calloc(s->n_blocks, 1);
    s->blk_owner = calloc(s->n_blocks, 1);
    s->free_stack = malloc((size_t)s->n_blocks * sizeof(uint32_t));
    size_t nf = (size_t)s->n_planes * (size_t)cfg->n_streams;
    s->data_wf = malloc(nf * sizeof(frontier_t));
    s->gc_wf = malloc(nf * sizeof(frontier_t));
    s->planes = calloc((size_t)s->n_planes, sizeof(plane_t));
    s->units = calloc((size_t)s->n_units, sizeof(unit_t));
    s->mpf = calloc((size_t)s->n_units * MPF_SLOTS, 1);
    s->dG = fl_div_make((uint32_t)s->G);
    s->dB = fl_div_make((uint32_t)s->B);
    s->dGB = fl_div_make((uint32_t)s->G * (uint32_t)s->B);
    s->ps_sh = fl_div_make((uint32_t)cfg->page_size).sh;
    s->pl_loc = malloc((size_t)s->n_planes * sizeof(uint32_t));
    s->unit_ch = malloc((size_t)s->n_units * sizeof(uint16_t));
    if (s->pl_loc)
        for (int p = 0; p < s->n_planes; p++)
            s->pl_loc[p] = (uint32_t)(p / (s->D * s->P)) << 16 | (uint32_t)((p / s->P) % s->D) << 8 | (uint32_t)(p % s->P);
    if (s->unit_ch)
        for (int u = 0; u < s->n_units; u++) s->unit_ch[u] = (uint16_t)(u / cfg->chips_per_channel);
    s->ch = calloc((size_t)cfg->n_channels, sizeof(channel_t));
    s->streams = calloc((size_t)cfg->n_streams, sizeof(stream_t));
    s->dirty = calloc((size_t)cfg->n_channels, 1);
    s->dirty_list = calloc((size_t)cfg->n_channels, sizeof(int32_t));
    s->xfer_sect = malloc(((size_t)cfg->page_size / 512 + 1) * sizeof(int64_t));
    if (s->xfer_sect)
        for (size_t k = 0; k <= (size_t)cfg->page_size / 512; k++)
            s->xfer_sect[k] = (int64_t)llround((uint32_t)(k * 512) * s->xfer_ns_per_byte);
    if (!s->xfer_sect || !s->l2p || !s->l2p_wr || !s->p2l || (s->cbits && (!s->cstat || !s->cstat_wr)) || !s->blk_valid || !s->blk_state || !s->blk_owner || !s->free_stack || !s->data_wf
        || !s->gc_wf || !s->planes || !s->pl_loc || !s->unit_ch || !s->units || !s->mpf || !s->ch || !s->streams || !s->dirty || !s->dirty_list
        || ev_init(s) < 0) {
        fl_free(s);
        snprintf(err, errlen, "out of memory for the geometry (%llu physical pages)", (unsigned long long)cfg->n_channels);
        return NULL;
    }
    for (size_t i = 0; i < nf; i++) { s->data_wf[i].blk = -1; s->data_wf[i].wp = 0; s->gc_wf[i] = s->data_wf[i]; }
    for (int p = 0; p < s->n_planes; p++) {
        plane_t *pl = &s->planes[p];
        pl->victim = -1; pl->stalled.head = pl->stalled.tail = -1;
        pl->n_free = s->B;
        for (int b = 0; b < s->B; b++) s->free_stack[(size_t)p * s->B + b] = (uint32_t)(s->B - 1 - b);
    }
    for (int u = 0; u < s->n_units; u++) {
        unit_t *un = &s->units[u];
        for (int q = 0; q < N_Q; q++) un->q[q].head = un->q[q].tail = un->wnext[q] = -1;
        un->qmask = 0;
        un->chan = u / cfg->chips_per_channel;
        un->rbit = cfg->chips_per_channel <= 64 ? 1ull << (u % cfg->chips_per_channel) : 0;
        un->free_blocks = (int64_t)s->D * s->P * s->B;
    }
    s->chip_mask = cfg->chips_per_channel >= 64 ? ~0ull : (1ull << cfg->chips_per_channel) - 1;
    for (int c = 0; c < cfg->n_channels; c++) {
        channel_t *ch = &s->ch[c];
        ch->wait_user.head = ch->wait_user.tail = ch->wait_gc.head = ch->wait_gc.tail = -1;
    }
    for (int i = 0; i < cfg->n_streams; i++) {
        stream_t *st = &s->streams[i];
        st->qd = cfg->queue_depth[i];
        st->prio = 1;
        st->slo_us = INFINITY;
        st->pending.head = st->pending.tail = -1;
        st->ev_pending_t = -1;
        st->last_t_ns = INT64_MIN;
        /* CWDP order: channel varies fastest, then chip (MQSim's Channel_ids x Chip_ids domain) */
        st->n_units = s->n_units;
        for (int k = 0; k < s->n_units; k++)
            st->units[k] = (k % cfg->n_channels) * cfg->chips_per_channel + k / cfg->n_channels;
        cwdp_build(s, st);
    }
    s->tx_free = s->rq_free = -1;
    s->rng = cfg->seed ^ 0x5DEECE66Dull;
    if (cfg->cache_mode && cache_init(s) < 0) {
        fl_free(s);
        snprintf(err, errlen, "out of memory for the data cache");
        return NULL;
    }
    return s;
}

void fl_free(fl_sim *s)
{
    if (!s) return;
    free(s->l2p); free(s->l2p_wr); free(s->p2l); free(s->cstat); free(s->cstat_wr); free(s->blk_valid); free(s->blk_state); free(s->blk_owner);
    free(s->free_stack); free(s->data_wf); free(s->gc_wf); free(s->planes); free(s->pl_loc); free(s->unit_ch); free(s->units); free(s->mpf); free(s->ch);
    if (s->streams)
        for (int i = 0; i < s->c.n_streams; i++) free(s->streams[i].cwdp);
    free(s->streams); free(s->dirty); free(s->dirty_list); free(s->tx); free(s->rq);
    ev_free(s);
    free(s->lat); free(s->dev_lat); free(s->lat_stream); free(s->xfer_sect);
    cache_free(s);
    free(s);
}

/* ------------------------------------------------------------------ host side */

static inline void log_latency(fl_sim *s, double us, double dev_us, int stream)
{
    if (s->lat_n == s->lat_cap) {
        s->lat_cap = s->lat_cap ? 2 * s->lat_cap : 4096;
        s->lat = realloc(s->lat, s->lat_cap * sizeof(double));
        s->dev_lat = realloc(s->dev_lat, s->lat_cap * sizeof(double));
        s->lat_stream = realloc(s->lat_stream, s->lat_cap * sizeof(uint16_t));
        if (!s->lat || !s->dev_lat || !s->lat_stream) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    }
    s->dev_lat[s->lat_n] = dev_us;
    s->lat[s->lat_n] = us;
    s->lat_stream[s->lat_n++] = (uint16_t)stream;
}

static void try_admit(fl_sim *s, int si);

static void admit(fl_sim *s, int32_t r)
{
    req_t *q = &s->rq[r];
    stream_t *st = &s->streams[q->stream];
    q->admit_ns = s->now;
    st->st.qdelay_sum_us += (double)(s->now - q->arr_ns) / 1000.0;
    st->st.issued++;
    st->inflight++;
    int64_t ps = s->c.page_size;
    uint64_t first, last;
    if (s->ps_sh >= 0) { first = (uint64_t)(q->off >> s->ps_sh); last = (uint64_t)((q->off + q->size - 1) >> s->ps_sh); }
    else { first = (uint64_t)(q->off / ps); last = (uint64_t)((q->off + q->size - 1) / ps); }
    q->remaining = (int32_t)(last - first + 1);
    int prio = st->prio;
    s->batching++;
    if (s->c.cache_mode) {
        cache_admit(s, r, first, last, prio);
        if (--s->batching == 0) flush_dirty(s);
        return;
    }
    host_txs(s, r, st, first, last, prio);
    if (--s->batching == 0) flush_dirty(s);
}

static void try_admit(fl_sim *s, int si)
{
    stream_t *st = &s->streams[si];
    while (st->inflight < st->qd && st->pending.head >= 0) {
        int32_t r = st->pending.head;
        if (s->rq[r].arr_ns > s->now) {
            if (st->ev_pending_t < 0 || st->ev_pending_t > s->rq[r].arr_ns) {
                st->ev_pending_t = s->rq[r].arr_ns;
                ev_push(s, s->rq[r].arr_ns, EV_ARRIVE, si);
            }
            return;
        }
        st->pending.head = s->rq[r].next;
        if (st->pending.head < 0) st->pending.tail = -1;
        admit(s, r);
    }
}

/* The request's last transaction (flash or DRAM) is done: log it, admit the next. */
static FL_ALWAYS_INLINE void finish_request(fl_sim *s, int32_t r)
{
    req_t *q = &s->rq[r];
    stream_t *st = &s->streams[q->stream];
    double lat = (double)(s->now - q->arr_ns) / 1000.0;
    st->st.completed++;
    st->st.lat_sum_us += lat;
    if (lat > st->slo_us) st->st.slo_viol++;
    if (q->write) { st->st.writes++; st->st.write_bytes += q->size; }
    else { st->st.reads++; st->st.read_bytes += q->size; }
    log_latency(s, lat, (double)(s->now - q->admit_ns) / 1000.0, q->stream);
    int si = q->stream;
    q->next = s->rq_free; s->rq_free = r;
    s->rq_live--;
    st->inflight--;
    /* try_admit has nothing to do when no request waits or the next one's arrival is scheduled */
    int32_t h = st->pending.head;
    if (h < 0 || (s->rq[h].arr_ns > s->now && st->ev_pending_t >= 0 && st->ev_pending_t <= s->rq[h].arr_ns)) return;
    try_admit(s, si);
}

static void complete_user(fl_sim *s, int32_t t)
{
    tx_t *x = &s->tx[t];
    int32_t r = x->req;
    stream_t *st = &s->streams[x->stream];
    if (x->kind == TX_READ) {
        st->st.read_tx++;
        if (s->cache_rd) cache_fill(s, t);
    } else {
        st->st.write_tx++;
        s->flash_programs++;
    }
    tx_release(s, t);
    req_t *q = &s->rq[r];
    if (--q->remaining > 0) return;
    finish_request(s, r);
}

static void complete_tx(fl_sim *s, int32_t t)
{
    int kind = s->tx[t].kind;
    if (kind <= TX_WRITE) complete_user(s, t); /* TX_READ, TX_WRITE: the common case first */
    else if (kind == TX_CWRITE) cache_write_done(s, t);
    else ftl_tx_done(s, t);
}

/* ------------------------------------------------------------------ events */

/* The chip's foreground command is done: resume a suspended command (MQSim ignores the resume
 * command's time), wait for one running on another die, or go idle. */
static void fg_finish(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    un->fg_active = 0;
    if (un->s_state == SUSP_HELD) {
        un->s_state = SUSP_NONE;
        un->kind = un->s_kind;
        un->n_active = un->s_n;
        memcpy(un->active, un->s_active, sizeof(un->active)); /* whole arrays: a fixed-size copy, inlined */
        un->active_stream = s->tx[un->active[0]].stream;
        un->fg_active = 1;
        un->in_array = 1;
        un->array_done_at = s->now + un->s_remaining;
        ev_push(s, un->array_done_at, EV_ARRAY, (int)u);
    } else if (un->s_state == SUSP_NONE) {
        un->busy = 0;
        un->busy_done += s->now - un->start;
    }
    chip_changed(s, un);
}

static void on_bus_done(fl_sim *s, int c)
{
    channel_t *ch = &s->ch[c];
    ch->busy = 0;
    ch->busy_done += s->now - ch->start;
    uint32_t u = (uint32_t)ch->unit;
    unit_t *un = &s->units[u];
    if (ch->phase == PH_CMD) {
        int k = un->kind == TX_READ ? 0 : un->kind == TX_WRITE ? 1 : 2;   /* (branches: chip_changed is
                                                                              specialised for each kind) */
        int64_t op = s->op_ns[k];
        un->in_array = 1;
        chip_changed(s, un);
        un->array_done_at = s->now + op;
        array_push(s, k, s->now + op, (int)u);
        channel_kick(s, c);
        return;
    }
    s->batching++;
    complete_tx(s, ch->tx);
    if (--un->pending_out == 0) fg_finish(s, u);
    /* the bus goes first to waiting data-outs, then to the chips (MQSim's PHY order) */
    channel_kick(s, c);
    if (--s->batching == 0) flush_dirty(s);
}

static void on_array_done(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    int c = channel_of_unit(s, u);
    if (!(un->in_array && s->now == un->array_done_at)) {
        /* a program/erase that ran beside the foreground command on another die; or else the
         * original end of a suspended operation (it moved when the operation was resumed) */
        if (un->s_state != SUSP_BG || s->now != un->s_done_at) return;
        int32_t bg[FL_MAX_PLANES];
        int nb = un->s_n;
        memcpy(bg, un->s_active, sizeof(bg));
        un->s_state = SUSP_NONE;
        if (!un->fg_active) { un->busy = 0; un->busy_done += s->now - un->start; }
        chip_changed(s, un);
        s->batching++;
        for (int i = 0; i < nb; i++) complete_tx(s, bg[i]);
        if (--s->batching == 0) flush_dirty(s);
        channel_kick(s, c);
        return;
    }
    un->in_array = 0;
    chip_changed(s, un);
    int n = un->n_active;
    un->n_active = 0;
    if (un->kind == TX_READ) {
        un->pending_out = n;
        for (int i = 0; i < n; i++) {
            int32_t t = un->active[i];
            if (!s->ch[c].busy) start_dataout(s, c, t);
            else fifo_push(s, s->tx[t].kind == TX_GCREAD ? &s->ch[c].wait_gc : &s->ch[c].wait_user, t);
        }
        return;
    }
    int32_t done[FL_MAX_PLANES];
    memcpy(done, un->active, sizeof(done));
    fg_finish(s, u);
    s->batching++;
    for (int i = 0; i < n; i++) complete_tx(s, done[i]);
    if (--s->batching == 0) flush_dirty(s);
    channel_kick(s, c);
}

/* A DRAM transfer of the data cache is done: the cache settles it, the request whose data it
 * carried finishes if that was its last, and then the DRAM channel takes its next transfer. */
static void on_dram_done(fl_sim *s, int32_t d)
{
    s->batching++;
    int32_t r = cache_dram_done(s, d);
    if (r >= 0) finish_request(s, r);
    cache_dram_next(s);
    if (--s->batching == 0) flush_dirty(s);
}

void fl_run_until(fl_sim *s, double t_us)
{
    int64_t T = (int64_t)llround(t_us * 1000.0);
    /* events due by Tc; the empty queues' markers (time INT64_MAX) are later */
    int64_t Tc = T < INT64_MAX ? T : INT64_MAX - 1;
    /* the next event is the earliest of the bus ring's first, the earliest array ring's first and
     * the heap's root (ftl.h), each handled in a branch of its own; a ring's event leaves it at once,
     * the heap's stays at the root while it is handled (heap_insert) */
    for (;;) {
        const qev_t *b = s->bq.hp, *x = s->ahp;
        const ev_t *h = &s->heap[0];
        if (key_less(x->t, x->seq, b->t, b->seq)) {
            if (key_less(h->t, h->seq, x->t, x->seq)) goto heap;
            if (x->t > Tc) break;
            s->now = x->t;
            uint32_t u = (uint32_t)x->arg;
            ring_t *a = &s->aq[s->amin];
            a->head = (a->head + 1) & a->mask;
            a->hp = &a->r[a->head];
            a->n--;
            s->amin = array_min(s);
            s->ahp = s->aq[s->amin].hp;
            on_array_done(s, u);
            continue;
        }
        if (key_less(h->t, h->seq, b->t, b->seq)) goto heap;
        if (b->t > Tc) break;
        s->now = b->t;
        int c = b->arg;
        s->bq.head = (s->bq.head + 1) & s->bq.mask;
        s->bq.hp = &s->bq.r[s->bq.head];
        s->bq.n--;
        on_bus_done(s, c);
        continue;
    heap:
        if (h->t > Tc) break;
        s->top_taken = 1;
        s->now = h->t;
        int arg = h->arg;
        if (h->type == EV_ARRIVE) {
            if (s->streams[arg].ev_pending_t == s->now) s->streams[arg].ev_pending_t = -1;
            try_admit(s, arg);
        } else if (h->type == EV_ARRAY) {
            on_array_done(s, (uint32_t)arg);
        } else {
            on_dram_done(s, arg);
        }
        if (s->top_taken) heap_settle(s);   /* nothing took its place */
    }
    if (T > s->now) s->now = T;
}

double fl_now_us(const fl_sim *s) { return (double)s->now / 1000.0; }

int fl_submit(fl_sim *s, size_t n, const double *t_us, const int32_t *stream, const int64_t *offset,
              const int64_t *size, const uint8_t *is_write, char *err, size_t errlen)
{
    /* validate everything first so that a bad request leaves the simulator unchanged: the pool's
     * room first, then each request written into the free entry it will take (a free entry's
     * contents do not matter), which the second pass links */
    if (n > (size_t)(INT32_MAX / 2 - s->rq_live)) {
        snprintf(err, errlen, "%zu requests with %d not finished: at most %d at a time", n, s->rq_live, INT32_MAX / 2);
        return -1;
    }
    rq_reserve(s, (int32_t)n);
    int32_t r = s->rq_free;
    int64_t last[FL_MAX_STREAMS];
    for (int i = 0; i < s->c.n_streams; i++) last[i] = s->streams[i].last_t_ns;
    for (size_t i = 0; i < n; i++) {
        if (stream[i] < 0 || stream[i] >= s->c.n_streams) {
            snprintf(err, errlen, "request %zu: stream %d does not exist (n_streams=%d)", i, stream[i], s->c.n_streams);
            return -1;
        }
        if (!(t_us[i] >= 0) || !isfinite(t_us[i])) {
            snprintf(err, errlen, "request %zu: time_us %g must be finite and >= 0", i, t_us[i]);
            return -1;
        }
        if (size[i] <= 0 || offset[i] < 0 || offset[i] > s->logical_bytes - size[i]) {
            snprintf(err, errlen, "request %zu: offset %lld + size %lld is past the logical capacity of %lld bytes "
                     "(or size <= 0)", i, (long long)offset[i], (long long)size[i], (long long)s->logical_bytes);
            return -1;
        }
        int64_t t = arrival_ns(t_us[i]);
        if (t < last[stream[i]]) {
            snprintf(err, errlen, "request %zu: time_us %g of stream %d is before that stream's previous request",
                     i, t_us[i], stream[i]);
            return -1;
        }
        last[stream[i]] = t;
        req_t *q = &s->rq[r];
        q->arr_ns = t;
        q->off = offset[i]; q->size = size[i]; q->write = is_write[i] ? 1 : 0; q->stream = (uint16_t)stream[i];
        r = q->next;
    }
    for (size_t i = 0; i < n; i++) {
        r = rq_alloc(s);
        const req_t *q = &s->rq[r];
        stream_t *st = &s->streams[q->stream];
        st->last_t_ns = q->arr_ns;
        if (st->pending.tail < 0) st->pending.head = r; else s->rq[st->pending.tail].next = r;
        st->pending.tail = r;
    }
    for (int i = 0; i < s->c.n_streams; i++) {
        stream_t *st = &s->streams[i];
        if (st->pending.head < 0 || st->inflight >= st->qd) continue;
        int64_t t = s->rq[st->pending.head].arr_ns;
        if (t < s->now) t = s->now;
        if (st->ev_pending_t < 0 || st->ev_pending_t > t) {
            st->ev_pending_t = t;
            ev_push(s, t, EV_ARRIVE, i);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ control */

int fl_set_units(fl_sim *s, int stream, const int32_t *units, int n, char *err, size_t errlen)
{
    if (stream < 0 || stream >= s->c.n_streams) {
        snprintf(err, errlen, "stream %d does not exist (n_streams=%d)", stream, s->c.n_streams);
        return -1;
    }
    if (n < 1) { snprintf(err, errlen, "stream %d: units must not be empty", stream); return -1; }
    uint8_t seen[1024] = {0};
    for (int i = 0; i < n; i++) {
        if (units[i] < 0 || units[i] >= s->n_units) {
            snprintf(err, errlen, "unit %d does not exist (n_units=%d: %d channels x %d chips)", units[i],
                     s->n_units, s->c.n_channels, s->c.chips_per_channel);
            return -1;
        }
        if (seen[units[i]]) { snprintf(err, errlen, "unit %d given twice", units[i]); return -1; }
        seen[units[i]] = 1;
    }
    /* CWDP order: chip-major, channel fastest, so consecutive pages go to different channels */
    stream_t *st = &s->streams[stream];
    st->n_units = 0;
    int W = s->c.chips_per_channel, C = s->c.n_channels;
    for (int chip = 0; chip < W; chip++)
        for (int c = 0; c < C; c++)
            if (seen[c * W + chip]) st->units[st->n_units++] = c * W + chip;
    cwdp_build(s, st);
    return 0;
}

int fl_get_units(const fl_sim *s, int stream, int32_t *out)
{
    const stream_t *st = &s->streams[stream];
    for (int i = 0; i < st->n_units; i++) out[i] = st->units[i];
    return st->n_units;
}

void fl_set_priority(fl_sim *s, int stream, int level) { s->streams[stream].prio = level; }
void fl_set_slo(fl_sim *s, int stream, double us) { s->streams[stream].slo_us = us; }

/* ------------------------------------------------------------------ counters */

void fl_stream_counters(const fl_sim *s, fl_stream_stats *out)
{
    for (int i = 0; i < s->c.n_streams; i++) {
        const stream_t *st = &s->streams[i];
        out[i] = st->st;
        int64_t waiting = 0;
        /* the pending list is in arrival order: count the arrived head */
        for (int32_t r = st->pending.head; r >= 0 && s->rq[r].arr_ns <= s->now; r = s->rq[r].next) waiting++;
        out[i].backlog = waiting + st->inflight;
    }
}

void fl_channel_busy(const fl_sim *s, double *busy_ns)
{
    for (int c = 0; c < s->c.n_channels; c++)
        busy_ns[c] = (double)(s->ch[c].busy_done + (s->ch[c].busy ? s->now - s->ch[c].start : 0));
}

void fl_unit_counters(const fl_sim *s, double *busy_ns, int64_t *valid_pages, int64_t *free_blocks,
                      int64_t *gc_ops, uint8_t *gc_active)
{
    for (int u = 0; u < s->n_units; u++) {
        const unit_t *un = &s->units[u];
        busy_ns[u] = (double)(un->busy_done + (un->busy ? s->now - un->start : 0));
        valid_pages[u] = un->valid_pages;
        free_blocks[u] = un->free_blocks;
        gc_ops[u] = un->gc_ops;
        gc_active[u] = 0;
        for (int k = 0; k < s->D * s->P; k++)
            if (s->planes[u * s->D * s->P + k].victim >= 0) gc_active[u] = 1;
    }
}

void fl_global_counters(const fl_sim *s, int64_t *host_page_writes, int64_t *flash_programs, int64_t *gc_runs,
                        int64_t *erases)
{
    *host_page_writes = s->host_page_writes;
    *flash_programs = s->flash_programs;
    *gc_runs = s->gc_runs;
    *erases = s->erases;
}

void fl_suspend_counters(const fl_sim *s, int64_t *program_suspends, int64_t *erase_suspends)
{
    *program_suspends = s->program_suspends;
    *erase_suspends = s->erase_suspends;
}

void fl_cache_counters(const fl_sim *s, fl_cache_stats *out) { *out = s->cst; }

size_t fl_latency_count(const fl_sim *s) { return s->lat_n; }
const double *fl_latency_values(const fl_sim *s) { return s->lat; }
const double *fl_device_latency_values(const fl_sim *s) { return s->dev_lat; }
const uint16_t *fl_latency_streams(const fl_sim *s) { return s->lat_stream; }
uint64_t fl_logical_pages(const fl_sim *s) { return s->logical_pages; }

size_t fl_mapping_bytes(const fl_sim *s)
{
    return s->logical_pages * sizeof(uint32_t) + (size_t)((s->phys_pages * (uint64_t)s->p2l_bits + 7) / 8 + 8)
           + (size_t)s->n_blocks * (sizeof(uint16_t) + 2 + sizeof(uint32_t))
           + (s->cbits ? (size_t)((s->logical_pages * (uint64_t)s->cbits + 7) / 8 + 8) : 0)
           + (l2p_wr_words(s) + cstat_wr_words(s)) * sizeof(uint64_t);
}

/* ------------------------------------------------------------------ self-check (tests) */

int fl_check(const fl_sim *s, char *err, size_t errlen)
{
    uint64_t mapped = 0;
    for (uint64_t l = 0; l < s->logical_pages; l++) {
        uint32_t p = L2P(s, l);
        if (p == NONE) continue;
        mapped++;
        if (p >= s->phys_pages || p2l_get(s, p) != l) {
            snprintf(err, errlen, "lpn %llu maps to page %u whose reverse map disagrees", (unsigned long long)l, p);
            return -1;
        }
    }
    uint64_t valid_sum = 0;
    for (uint32_t b = 0; b < s->n_blocks; b++) {
        uint32_t v = 0;
        for (uint32_t g = 0; g < (uint32_t)s->G; g++) v += (uint32_t)page_valid(s, b * (uint32_t)s->G + g);
        if (v != s->blk_valid[b]) {
            snprintf(err, errlen, "block %u: valid count %u, but %u pages are valid", b, s->blk_valid[b], v);
            return -1;
        }
        if (s->blk_state[b] == BLK_FREE && v) {
            snprintf(err, errlen, "free block %u holds %u valid pages", b, v);
            return -1;
        }
        valid_sum += v;
    }
    if (valid_sum != mapped) {
        snprintf(err, errlen, "%llu valid pages for %llu mapped lpns", (unsigned long long)valid_sum,
                 (unsigned long long)mapped);
        return -1;
    }
    int64_t uv = 0, uf = 0, pf = 0;
    for (int u = 0; u < s->n_units; u++) { uv += s->units[u].valid_pages; uf += s->units[u].free_blocks; }
    for (int p = 0; p < s->n_planes; p++) pf += s->planes[p].n_free;
    if ((uint64_t)uv != mapped || uf != pf) {
        snprintf(err, errlen, "unit counters disagree: valid %lld vs %llu, free %lld vs %lld", (long long)uv,
                 (unsigned long long)mapped, (long long)uf, (long long)pf);
        return -1;
    }
    uint32_t *cnt = calloc((size_t)s->n_units * MPF_SLOTS, sizeof(uint32_t));
    if (!cnt) { snprintf(err, errlen, "out of memory"); return -1; }
    for (int u = 0; u < s->n_units; u++)
        for (int q = 0; q < N_Q; q++) {
            const unit_t *un = &s->units[u];
            int k = 0;
            int32_t t = un->q[q].head;
            for (; t >= 0 && k < MP_SCAN; t = s->tx[t].next, k++) {
                if (s->tx[t].mslot != mpf_slot(s->tx[t].dp, s->tx[t].pid)) {
                    snprintf(err, errlen, "unit %d: a queued transaction's partner slot is stale", u);
                    free(cnt);
                    return -1;
                }
                cnt[(size_t)u * MPF_SLOTS + s->tx[t].mslot]++;
            }
            if (un->wn[q] != k || un->wnext[q] != t) {
                snprintf(err, errlen, "unit %d queue %d: window of %d followed by %d, the queue's first %d by %d", u, q,
                         un->wn[q], un->wnext[q], k, t);
                free(cnt);
                return -1;
            }
        }
    for (size_t k = 0; k < (size_t)s->n_units * MPF_SLOTS; k++)
        if (s->mpf[k] != 255 && cnt[k] != s->mpf[k]) {   /* (255: saturated, any count) */
            snprintf(err, errlen, "%u queued transactions in partner slot %zu, counted %u", cnt[k], k, s->mpf[k]);
            free(cnt);
            return -1;
        }
    free(cnt);
    for (int c = 0; c < s->c.n_channels; c++) {
        int n = 0;
        for (int k = 0; k < s->c.chips_per_channel; k++) {
            const unit_t *un = &s->units[c * s->c.chips_per_channel + k];
            if (un->ready != (un->qmask && !un->stuck)) {
                snprintf(err, errlen, "unit %d: ready flag %d disagrees with its queues and stuck flag",
                         c * s->c.chips_per_channel + k, un->ready);
                return -1;
            }
            n += un->ready;
        }
        uint64_t m = 0;
        for (int k = 0; k < s->c.chips_per_channel && k < 64; k++)
            if (s->units[c * s->c.chips_per_channel + k].ready) m |= 1ull << k;
        if (s->c.chips_per_channel > 64) m = 0;
        if (m != s->ch[c].rmask) {
            snprintf(err, errlen, "channel %d: mask of chips ready disagrees with their flags", c);
            return -1;
        }
        if (n != s->ch[c].n_ready) {
            snprintf(err, errlen, "channel %d counts %d chips ready, %d are", c, s->ch[c].n_ready, n);
            return -1;
        }
    }
    return s->c.cache_mode ? cache_check(s, err, errlen) : 0;
}
