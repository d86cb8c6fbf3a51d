/* The real-device I/O engine of hss-gym's "uring" backend: pure C (no Python), Linux only.
 *
 * Why: the HSS core (backends/core/hss.c and hss_*.c) decides where every page lives and, with its
 * I/O log enabled (hss_move.c), records every device-level operation in order (host runs, and
 * migrations split into CREAD + CWRITE). This engine replays that log on real files or block devices:
 *
 *  - io_uring through raw io_uring_setup/io_uring_enter syscalls and <linux/io_uring.h> (no
 *    liburing), SQ sized for the queue depth, CQ twice that, acquire/release ordering on the ring
 *    indices, registered buffers and files when the kernel allows; or a psync engine
 *    (pread/pwrite) per device, the better choice on tmpfs where io_uring punts to a worker;
 *  - O_DIRECT with the alignment from statx(STATX_DIOALIGN), buffered I/O where refused;
 *  - host requests keep up to `qd` in flight; each request's latency is measured with
 *    CLOCK_MONOTONIC from issue to the reaping of its last completion; timed mode honours the
 *    trace's arrival times, otherwise as fast as possible;
 *  - migrations run as real page copies at IOPRIO_CLASS_IDLE, one page operation in flight at a
 *    time, in idle time; a copy that a host request depends on (a read of the page's new slot,
 *    a write to the slot it is read from) runs first, so data is never lost;
 *  - every I/O is bounds-checked against the configured device size;
 *  - verify mode stamps each written page (logical page, version, checksum) and checks every
 *    read and copy against the version the log says it must hold.
 * Errors name the device path, the byte offset and errno (ur_engine.err).
 */
#ifndef HSS_URING_ENGINE_H
#define HSS_URING_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "hss.h"

#define UR_PAGE 4096u
#define UR_MAX_DEV 8
#define UR_CHUNK_PAGES 32u                     /* largest single I/O: 128 KiB */
#define UR_CHUNK (UR_CHUNK_PAGES * UR_PAGE)
#define UR_MAX_QD 1024
#define UR_PEND_CAP 1024                       /* pending copy operations before forcing */

enum ur_engine_kind { UR_ENGINE_URING = 0, UR_ENGINE_PSYNC = 1 };

typedef struct ur_dev {
    int fd;
    int fixed;                 /* index among registered files, -1 if none */
    int engine;                /* UR_ENGINE_* */
    int direct;                /* opened with O_DIRECT */
    int created;               /* file created by us */
    int unlinked;              /* ... and unlinked since (ur_unlink_created): only the fd holds it */
    int is_blk;
    uint32_t mem_align, off_align;
    uint64_t size;             /* usable bytes: every I/O must lie below this */
    char path[512];
    char note[160];            /* why buffered / which engine, for stats */
    /* counters */
    uint64_t reads, writes, bytes_read, bytes_written, copy_reads, copy_writes, retries, short_ios;
} ur_dev;

typedef struct ur_ring {
    int fd;
    unsigned sq_entries, cq_entries, features, flags;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    void *sq_ptr, *cq_ptr, *sqe_ptr, *cqes;
    size_t sq_sz, cq_sz, sqe_sz;
    unsigned to_submit;        /* SQEs written but not yet passed to the kernel */
    int fixed_bufs, fixed_files;
} ur_ring;

typedef struct ur_run { uint64_t page, slot; uint32_t n; uint8_t dev, write; } ur_run;

typedef struct ur_req {
    int active;
    uint64_t seq;              /* position in the log */
    int64_t t_issue, t_target;
    size_t out;                /* index in the latency output */
    int ops_left;
    ur_run *runs;
    int nruns, cap;
} ur_req;

typedef struct ur_pend { uint64_t seq, page, slot; uint32_t expect; uint8_t dev, write; } ur_pend;

typedef struct ur_op {
    int kind;                  /* 0 free, 1 host, 2 copy, 3 bench */
    int dev, write, req;
    uint64_t off, page;
    uint32_t len, done;
    char *buf;
    int64_t t0;
    int next_free;
    uint32_t expect[UR_CHUNK_PAGES];
} ur_op;

typedef struct ur_vslot { uint64_t page; uint32_t ver; } ur_vslot; /* ver 0 = empty */

typedef struct ur_stats {
    uint64_t requests, host_ops, copies_bg, copies_forced, copy_pages, pend_max;
    int64_t host_wait_ns;      /* timed mode: time requests started after their arrival */
    int64_t conflict_wait_ns;  /* time requests waited for copies/requests they depend on */
    uint64_t verify_checked, verify_errors, enter_calls;
} ur_stats;

typedef struct ur_engine {
    int ndev;
    ur_dev dev[UR_MAX_DEV];
    ur_ring ring;
    int have_ring;
    int qd, timed, verify;
    unsigned nops, inflight_ops;
    ur_op *ops;
    char *bufs;
    size_t bufs_len;
    int free_head;
    ur_req *reqs;
    int nreq_active;
    ur_req cur;                /* request being assembled from the log */
    ur_pend *pend;
    size_t pend_head, pend_len;
    int copy_op;               /* op index of the copy in flight, -1 if none */
    uint64_t copy_seq;
    struct { uint64_t page; char *buf; } *stage;
    size_t nstage, stage_cap;
    ur_vslot *vmap;
    size_t vmap_cap, vmap_len;
    uint64_t seq;
    int epoch_set;
    int64_t epoch_ns;
    double epoch_us;
    double *lat;               /* latency output (µs) of requests, indexed from the last reset */
    size_t lat_cap, next_req, out_base; /* lat[k] = request out_base + k */
    ur_stats st;
    int failed;
    int err_no;
    char err[1024];
    char verify_msg[1024];
} ur_engine;

/* Open flags */
#define UR_O_CREATE 1          /* create missing regular files */
#define UR_O_OVERWRITE 2       /* an existing non-empty regular file may be overwritten */
#define UR_O_ALLOW_BLOCK 4     /* block devices allowed */
#define UR_O_NO_DIRECT 8       /* never use O_DIRECT */
#define UR_O_REQUIRE_DIRECT 16 /* fail if O_DIRECT is refused */

/* Is io_uring usable here? 0 if yes, else -errno with a reason in msg. */
int ur_probe(char *msg, size_t msglen);

/* Engine lifecycle. engines[i] is UR_ENGINE_URING, UR_ENGINE_PSYNC or -1 (auto: psync on tmpfs).
 * Returns 0, or -1 with e->err/e->err_no set (and everything opened so far closed). */
int ur_open(ur_engine *e, int ndev, const char *const *paths, const uint64_t *sizes,
            const int *engines, int flags, int qd, int verify, int timed);
/* Close files and the ring; unlink files we created (not unlinked already) when remove_created. */
void ur_close(ur_engine *e, int remove_created);
/* Unlink the files we created while keeping them open: their data lives as long as the fds, so a
 * run killed by SIGKILL leaves nothing on disk (the kernel frees it with the process). A path that
 * no longer names the open file (replaced meanwhile) is left alone, and one that cannot be
 * unlinked stays (removed on close). Returns how many created files stay linked. */
int ur_unlink_created(ur_engine *e);

/* Latency output buffer (borrowed) for the requests of the following ur_exec calls: lat[0] is the
 * next request issued; requests issued before this call are not written. */
void ur_set_output(ur_engine *e, double *lat, size_t cap);
/* Forget pending copies (after waiting for everything), versions, request counter, epoch. */
int ur_reset(ur_engine *e);
/* Replay n log entries. arrivals[k] (µs, trace time) belongs to the k-th HSS_LOG_END entry.
 * wait: return only when every request of this call has completed. 0, or -1 on error. */
int ur_exec(ur_engine *e, const hss_log_ent *log, size_t n, const double *arrivals, size_t narr,
            int wait);
/* Wait for all requests and run every pending copy. */
int ur_flush(ur_engine *e);

/* Raw benchmark: n I/Os of bs bytes (multiple of 4096) at random aligned offsets (seq: in order)
 * on device d with qd in flight. *elapsed_ns gets the wall time; lat_ns (n entries) the
 * latency of each I/O when not NULL (NULL: no per-I/O clock reads). */
int ur_bench(ur_engine *e, int d, int write, uint32_t bs, int qd, uint64_t n, int seq,
             uint64_t seed, int64_t *elapsed_ns, int64_t *lat_ns);

/* Verify: read pages[i] at (devs[i], slots[i]) and check it holds its latest version.
 * Counts into *lost (wrong page/version or no stamp) and *corrupt (bad checksum). */
int ur_verify(ur_engine *e, size_t n, const uint64_t *pages, const uint8_t *devs,
              const uint64_t *slots, uint64_t *lost, uint64_t *corrupt);
/* Latest version of a page (0: never written). */
uint32_t ur_version(const ur_engine *e, uint64_t page);
/* Pages with a version, written to out (up to cap); returns the count. */
size_t ur_written_pages(const ur_engine *e, uint64_t *out, size_t cap);

/* Verify stamps (exposed for tests). */
void ur_stamp_page(char *p, uint64_t page, uint32_t version);
/* 0 ok; 1 wrong page/version/no stamp (lost); 2 bad checksum (corrupt). */
int ur_check_page(const char *p, uint64_t page, uint32_t version, uint32_t *found_version);

int64_t ur_now_ns(void);

#endif
