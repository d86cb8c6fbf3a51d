/* The real-device I/O engine (see engine.h for what and why). Linux only. */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/ioprio.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OPK_FREE 0
#define OPK_HOST 1
#define OPK_COPY 2
#define OPK_BENCH 3
#define IDLE_PRIO ((__u16)IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0))

/* ------------------------------------------------------------------ helpers */

int64_t ur_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int set_err(ur_engine *e, int err, const ur_dev *d, uint64_t off, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    e->err_no = err;
    if (d)
        snprintf(e->err, sizeof e->err, "%s: %s at offset %llu: %s (errno %d)", what, d->path,
                 (unsigned long long)off, strerror(err), err);
    else
        snprintf(e->err, sizeof e->err, "%s: %s (errno %d)", what, strerror(err), err);
    return -1;
}

/* An I/O-path failure: the engine stops issuing work and drains what is in flight. */
static int io_fail(ur_engine *e, int err, const ur_dev *d, uint64_t off, const char *what)
{
    if (!e->failed) {
        set_err(e, err, d, off, "%s", what);
        e->failed = 1;
    }
    return -1;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* ------------------------------------------------------------------ verify stamps */

#define STAMP_MAGIC 0x48535347594d5631ULL /* "HSSGYMV1" */

static uint64_t page_sum(const uint64_t *w)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < UR_PAGE / 8; i++)
        if (i != 3)
            h = (h ^ w[i]) * 0x100000001b3ULL + (h >> 29);
    return h;
}

void ur_stamp_page(char *p, uint64_t page, uint32_t version)
{
    uint64_t *w = (uint64_t *)(void *)p;
    uint64_t x = mix64(page * 0x100000001ULL ^ version);
    for (size_t i = 4; i < UR_PAGE / 8; i++) {
        x = mix64(x);
        w[i] = x;
    }
    w[0] = STAMP_MAGIC;
    w[1] = page;
    w[2] = version;
    w[3] = page_sum(w);
}

int ur_check_page(const char *p, uint64_t page, uint32_t version, uint32_t *found)
{
    const uint64_t *w = (const uint64_t *)(const void *)p;
    *found = w[0] == STAMP_MAGIC ? (uint32_t)w[2] : 0;
    if (page_sum(w) != w[3])
        return w[0] == STAMP_MAGIC ? 2 : 1;
    if (w[0] != STAMP_MAGIC || w[1] != page || w[2] != version)
        return 1;
    return 0;
}

/* page -> latest version (open addressing, linear probing; version 0 = empty) */
static ur_vslot *vmap_find(const ur_engine *e, uint64_t page)
{
    if (!e->vmap_cap)
        return NULL;
    size_t i = mix64(page) & (e->vmap_cap - 1);
    while (e->vmap[i].ver && e->vmap[i].page != page)
        i = (i + 1) & (e->vmap_cap - 1);
    return &e->vmap[i];
}

uint32_t ur_version(const ur_engine *e, uint64_t page)
{
    const ur_vslot *s = vmap_find(e, page);
    return s ? s->ver : 0;
}

static int vmap_bump(ur_engine *e, uint64_t page, uint32_t *ver)
{
    if ((e->vmap_len + 1) * 2 > e->vmap_cap) {
        size_t ncap = e->vmap_cap ? e->vmap_cap * 2 : 1024;
        ur_vslot *old = e->vmap, *nv = calloc(ncap, sizeof *nv);
        if (!nv)
            return -1;
        size_t ocap = e->vmap_cap;
        e->vmap = nv;
        e->vmap_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].ver)
                *vmap_find(e, old[i].page) = old[i];
        free(old);
    }
    ur_vslot *s = vmap_find(e, page);
    if (!s->ver) {
        s->page = page;
        e->vmap_len++;
    }
    *ver = ++s->ver ? s->ver : (s->ver = 1);
    return 0;
}

size_t ur_written_pages(const ur_engine *e, uint64_t *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < e->vmap_cap; i++)
        if (e->vmap[i].ver) {
            if (k < cap)
                out[k] = e->vmap[i].page;
            k++;
        }
    return k;
}

static void verify_fail(ur_engine *e, const ur_dev *d, uint64_t off, uint64_t page, uint32_t want,
                        uint32_t found, int rc, const char *what)
{
    e->st.verify_errors++;
    if (!e->verify_msg[0])
        snprintf(e->verify_msg, sizeof e->verify_msg,
                 "verify failed on %s of page %llu at %s offset %llu: expected version %u, %s %u",
                 what, (unsigned long long)page, d->path, (unsigned long long)off, want,
                 rc == 2 ? "checksum mismatch, stamp says version" : "found version", found);
}

/* ------------------------------------------------------------------ ring */

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
    return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags, void *arg,
                     size_t argsz)
{
    return (int)syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, arg, argsz);
}

static int sys_register(int fd, unsigned op, void *arg, unsigned nr)
{
    return (int)syscall(__NR_io_uring_register, fd, op, arg, nr);
}

int ur_probe(char *msg, size_t msglen)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = sys_setup(1, &p);
    if (fd >= 0) {
        close(fd);
        if (msg && msglen)
            msg[0] = '\0';
        return 0;
    }
    int err = errno;
    char sysctl[32] = "";
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
    if (f) {
        if (!fgets(sysctl, sizeof sysctl, f))
            sysctl[0] = '\0';
        fclose(f);
        sysctl[strcspn(sysctl, "\n")] = '\0';
    }
    if (err == ENOSYS)
        snprintf(msg, msglen, "io_uring_setup: function not implemented (a kernel without io_uring, "
                              "or a seccomp filter blocks it)");
    else if (err == EPERM && sysctl[0] && sysctl[0] != '0')
        snprintf(msg, msglen, "io_uring is disabled by sysctl kernel.io_uring_disabled=%s", sysctl);
    else if (err == EPERM)
        snprintf(msg, msglen, "io_uring_setup: operation not permitted (seccomp, or not a member "
                              "of kernel.io_uring_group)");
    else
        snprintf(msg, msglen, "io_uring_setup failed: %s (errno %d)", strerror(err), err);
    return -err;
}

static void ring_exit(ur_ring *r)
{
    if (r->sqe_ptr && r->sqe_ptr != MAP_FAILED)
        munmap(r->sqe_ptr, r->sqe_sz);
    if (r->cq_ptr && r->cq_ptr != MAP_FAILED && r->cq_ptr != r->sq_ptr)
        munmap(r->cq_ptr, r->cq_sz);
    if (r->sq_ptr && r->sq_ptr != MAP_FAILED)
        munmap(r->sq_ptr, r->sq_sz);
    if (r->fd >= 0)
        close(r->fd);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

static int ring_init(ur_ring *r, unsigned entries)
{
    struct io_uring_params p;
    /* Newest flags first; older kernels reject them with EINVAL. */
    static const unsigned tries[] = {
        IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER,
        IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN, IORING_SETUP_CQSIZE, 0};
    memset(r, 0, sizeof *r);
    r->fd = -1;
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        memset(&p, 0, sizeof p);
        p.flags = tries[i];
        p.cq_entries = entries * 2;
        r->fd = sys_setup(entries, &p);
        if (r->fd >= 0 || errno != EINVAL)
            break;
    }
    if (r->fd < 0)
        return -errno;
    r->flags = p.flags;
    r->features = p.features;
    r->sq_entries = p.sq_entries;
    r->cq_entries = p.cq_entries;
    r->sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    r->cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP) {
        if (r->cq_sz > r->sq_sz)
            r->sq_sz = r->cq_sz;
        r->cq_sz = r->sq_sz;
    }
    r->sq_ptr = mmap(NULL, r->sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                     IORING_OFF_SQ_RING);
    if (r->sq_ptr == MAP_FAILED)
        goto fail;
    if (p.features & IORING_FEAT_SINGLE_MMAP)
        r->cq_ptr = r->sq_ptr;
    else {
        r->cq_ptr = mmap(NULL, r->cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                         IORING_OFF_CQ_RING);
        if (r->cq_ptr == MAP_FAILED)
            goto fail;
    }
    r->sqe_sz = p.sq_entries * sizeof(struct io_uring_sqe);
    r->sqe_ptr = mmap(NULL, r->sqe_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                      IORING_OFF_SQES);
    if (r->sqe_ptr == MAP_FAILED)
        goto fail;
    char *sq = r->sq_ptr, *cq = r->cq_ptr;
    r->sq_head = (unsigned *)(void *)(sq + p.sq_off.head);
    r->sq_tail = (unsigned *)(void *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(void *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(void *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(void *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(void *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(void *)(cq + p.cq_off.ring_mask);
    r->cqes = cq + p.cq_off.cqes;
    return 0;
fail:;
    int err = errno;
    ring_exit(r);
    return -err;
}

/* A zeroed SQE at the tail, published with a release store; NULL if the SQ is full. */
static struct io_uring_sqe *ring_sqe(ur_ring *r)
{
    unsigned tail = *r->sq_tail; /* only we write the tail */
    unsigned head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
    if (tail - head >= r->sq_entries)
        return NULL;
    unsigned idx = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = (struct io_uring_sqe *)r->sqe_ptr + idx;
    memset(sqe, 0, sizeof *sqe);
    r->sq_array[idx] = idx;
    return sqe;
}

static void ring_publish(ur_ring *r)
{
    __atomic_store_n(r->sq_tail, *r->sq_tail + 1, __ATOMIC_RELEASE);
    r->to_submit++;
}

/* Submit queued SQEs and optionally wait for min_complete completions (until the absolute
 * CLOCK_MONOTONIC deadline when > 0). Returns 0, 1 on timeout, or -errno. */
static int ring_enter(ur_engine *e, unsigned min_complete, int64_t deadline)
{
    ur_ring *r = &e->ring;
    for (;;) {
        unsigned flags = min_complete ? IORING_ENTER_GETEVENTS : 0;
        struct io_uring_getevents_arg arg;
        struct __kernel_timespec ts;
        void *argp = NULL;
        size_t argsz = 0;
        if (min_complete && deadline > 0 && (r->features & IORING_FEAT_EXT_ARG)) {
            int64_t left = deadline - ur_now_ns();
            if (left <= 0) {
                if (!r->to_submit)
                    return 1;
                min_complete = 0;
                flags = 0;
            } else {
                ts.tv_sec = left / 1000000000;
                ts.tv_nsec = left % 1000000000;
                memset(&arg, 0, sizeof arg);
                arg.sigmask_sz = _NSIG / 8;
                arg.ts = (uint64_t)(uintptr_t)&ts;
                flags |= IORING_ENTER_EXT_ARG;
                argp = &arg;
                argsz = sizeof arg;
            }
        }
        e->st.enter_calls++;
        int ret = sys_enter(r->fd, r->to_submit, min_complete, flags, argp, argsz);
        if (ret >= 0) {
            r->to_submit -= (unsigned)ret <= r->to_submit ? (unsigned)ret : r->to_submit;
            if (!r->to_submit || min_complete)
                return 0;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == ETIME)
            return 1;
        if ((errno == EAGAIN || errno == EBUSY) && min_complete == 0)
            return 0; /* kernel busy: completions must be reaped first; caller retries */
        if (errno == EAGAIN || errno == EBUSY) {
            if (r->to_submit) { /* wait only, submit later */
                unsigned keep = r->to_submit;
                r->to_submit = 0;
                int rc = ring_enter(e, min_complete, deadline);
                r->to_submit = keep;
                return rc;
            }
            continue;
        }
        return -errno;
    }
}

/* ------------------------------------------------------------------ ops */

static int op_alloc(ur_engine *e)
{
    int i = e->free_head;
    if (i < 0)
        return -1;
    e->free_head = e->ops[i].next_free;
    e->ops[i].next_free = -1;
    return i;
}

static void op_free(ur_engine *e, int i)
{
    e->ops[i].kind = OPK_FREE;
    e->ops[i].next_free = e->free_head;
    e->free_head = i;
}

static void op_complete(ur_engine *e, int i, int res, int64_t now);

/* Issue (the rest of) op i. psync devices complete it synchronously. */
static int op_submit(ur_engine *e, int i)
{
    ur_op *o = &e->ops[i];
    ur_dev *d = &e->dev[o->dev];
    if (o->off + o->len > d->size || o->len % UR_PAGE || o->off % UR_PAGE)
        return io_fail(e, ERANGE, d, o->off, "I/O outside the configured device size refused");
    if (d->engine == UR_ENGINE_PSYNC) {
        int res = 0, tries = 0;
        while (o->done + (uint32_t)res < o->len) {
            uint32_t at = o->done + (uint32_t)res;
            ssize_t k = o->write ? pwrite(d->fd, o->buf + at, o->len - at, (off_t)(o->off + at))
                                 : pread(d->fd, o->buf + at, o->len - at, (off_t)(o->off + at));
            if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EBUSY) && ++tries < 1000) {
                d->retries++;
                continue;
            }
            if (k < 0) {
                res = -errno;
                break;
            }
            if (k == 0)
                break;
            if ((uint32_t)k < o->len - at)
                d->short_ios++;
            res += (int)k;
        }
        op_complete(e, i, res, 0);
        return e->failed ? -1 : 0;
    }
    ur_ring *r = &e->ring;
    struct io_uring_sqe *sqe = ring_sqe(r);
    if (!sqe) { /* cannot happen: ops in flight <= SQ entries; flush once to be safe */
        ring_enter(e, 0, 0);
        if (!(sqe = ring_sqe(r)))
            return io_fail(e, EBUSY, d, o->off, "submission queue full");
    }
    if (r->fixed_bufs) {
        sqe->opcode = o->write ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
        sqe->buf_index = (__u16)i;
    } else
        sqe->opcode = o->write ? IORING_OP_WRITE : IORING_OP_READ;
    if (r->fixed_files && d->fixed >= 0) {
        sqe->fd = d->fixed;
        sqe->flags = IOSQE_FIXED_FILE;
    } else
        sqe->fd = d->fd;
    sqe->off = o->off + o->done;
    sqe->addr = (uint64_t)(uintptr_t)(o->buf + o->done);
    sqe->len = o->len - o->done;
    sqe->ioprio = o->kind == OPK_COPY ? IDLE_PRIO : 0;
    sqe->user_data = (uint64_t)i;
    ring_publish(r);
    e->inflight_ops++;
    return 0;
}

/* Reap available completions; when wait, block for at least one (until deadline if > 0) when
 * uring ops are in flight, else sleep until the deadline. Returns completions handled or -1. */
static int reap(ur_engine *e, int wait, int64_t deadline)
{
    if (e->have_ring && (e->ring.to_submit || (wait && e->inflight_ops))) {
        int rc = ring_enter(e, wait && e->inflight_ops ? 1 : 0, deadline);
        if (rc < 0) {
            set_err(e, -rc, NULL, 0, "io_uring_enter failed");
            e->failed = 1;
            return -1;
        }
    } else if (wait && deadline > 0) {
        struct timespec ts = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        return 0;
    }
    if (!e->have_ring)
        return 0;
    ur_ring *r = &e->ring;
    unsigned head = *r->cq_head; /* only we write the head */
    unsigned tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
    if (head == tail)
        return 0;
    int64_t now = ur_now_ns();
    int n = 0;
    struct io_uring_cqe *cqes = r->cqes;
    while (head != tail) {
        struct io_uring_cqe c = cqes[head & *r->cq_mask];
        head++;
        __atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
        e->inflight_ops--;
        n++;
        if (c.user_data < e->nops)
            op_complete(e, (int)c.user_data, c.res, now);
        if (head == tail) /* more may have arrived meanwhile */
            tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
    }
    return e->failed ? -1 : n;
}

/* ------------------------------------------------------------------ requests and copies */

static void stage_put(ur_engine *e, uint64_t page, const char *src);
static int stage_take(ur_engine *e, uint64_t page, char *dst);

static void req_done(ur_engine *e, ur_req *q, int64_t now)
{
    if (!now)
        now = ur_now_ns();
    if (q->out >= e->out_base && q->out - e->out_base < e->lat_cap)
        e->lat[q->out - e->out_base] = (double)(now - q->t_issue) / 1000.0;
    q->active = 0;
    e->nreq_active--;
}

static void op_complete(ur_engine *e, int i, int res, int64_t now)
{
    ur_op *o = &e->ops[i];
    ur_dev *d = &e->dev[o->dev];
    if (o->kind == OPK_BENCH) { /* the benchmark loop handles its own completions */
        o->done = res < 0 ? (uint32_t)res : o->done + (uint32_t)res;
        o->t0 = now ? now : ur_now_ns();
        o->kind = -OPK_BENCH;
        return;
    }
    if (res == -EAGAIN || res == -EINTR || res == -EBUSY) {
        d->retries++;
        op_submit(e, i);
        return;
    }
    if (res < 0) {
        io_fail(e, -res, d, o->off + o->done, o->write ? "write failed" : "read failed");
        goto release;
    }
    if ((uint32_t)res < o->len - o->done) {
        if (res == 0) {
            io_fail(e, EIO, d, o->off + o->done, o->write ? "short write made no progress"
                                                           : "short read (end of file)");
            goto release;
        }
        d->short_ios++;
        o->done += (uint32_t)res;
        op_submit(e, i); /* resubmit the remainder */
        return;
    }
    if (e->verify && !o->write && (o->kind == OPK_HOST || o->kind == OPK_COPY)) {
        for (uint32_t k = 0; k < o->len / UR_PAGE; k++) {
            if (!o->expect[k])
                continue; /* never written: any content */
            uint32_t found;
            int rc = ur_check_page(o->buf + (size_t)k * UR_PAGE, o->page + k, o->expect[k], &found);
            e->st.verify_checked++;
            if (rc)
                verify_fail(e, d, o->off + (uint64_t)k * UR_PAGE, o->page + k, o->expect[k], found, rc,
                            o->kind == OPK_HOST ? "host read" : "migration read");
        }
    }
    if (o->kind == OPK_HOST) {
        if (o->write) {
            d->writes++;
            d->bytes_written += o->len;
        } else {
            d->reads++;
            d->bytes_read += o->len;
        }
        ur_req *q = &e->reqs[o->req];
        if (--q->ops_left == 0)
            req_done(e, q, now);
    } else if (o->kind == OPK_COPY) {
        if (o->write)
            d->copy_writes++;
        else {
            d->copy_reads++;
            stage_put(e, o->page, o->buf);
        }
        e->copy_op = -1;
    }
release:
    op_free(e, i);
}

static void stage_put(ur_engine *e, uint64_t page, const char *src)
{
    if (e->nstage == e->stage_cap) {
        size_t ncap = e->stage_cap ? e->stage_cap * 2 : 64;
        void *ns = realloc(e->stage, ncap * sizeof *e->stage);
        if (!ns) {
            io_fail(e, ENOMEM, &e->dev[0], 0, "out of memory staging a migration");
            return;
        }
        e->stage = ns;
        for (size_t k = e->stage_cap; k < ncap; k++)
            e->stage[k].buf = NULL;
        e->stage_cap = ncap;
    }
    char *buf = e->stage[e->nstage].buf; /* buffers of taken entries are kept for reuse */
    if (!buf && !(buf = malloc(UR_PAGE))) {
        io_fail(e, ENOMEM, &e->dev[0], 0, "out of memory staging a migration");
        return;
    }
    memcpy(buf, src, UR_PAGE);
    e->stage[e->nstage].buf = buf;
    e->stage[e->nstage].page = page;
    e->nstage++;
}

static int stage_take(ur_engine *e, uint64_t page, char *dst)
{
    for (size_t k = 0; k < e->nstage; k++)
        if (e->stage[k].page == page) {
            char *buf = e->stage[k].buf;
            memcpy(dst, buf, UR_PAGE);
            e->nstage--;
            e->stage[k] = e->stage[e->nstage];
            e->stage[e->nstage].buf = buf;
            return 0;
        }
    return -1;
}

static int overlap(const ur_run *a, int dev, uint64_t slot, uint32_t n, int write)
{
    return a->dev == dev && (a->write || write) && slot < a->slot + a->n && a->slot < slot + n;
}

/* Does an in-flight request logged before `seq` touch (dev, slot) in a conflicting way? */
static int req_conflict(const ur_engine *e, uint64_t seq, int dev, uint64_t slot, uint32_t n, int write)
{
    for (int k = 0; k < e->qd; k++) {
        const ur_req *q = &e->reqs[k];
        if (!q->active || q->seq > seq)
            continue;
        for (int j = 0; j < q->nruns; j++)
            if (overlap(&q->runs[j], dev, slot, n, write))
                return 1;
    }
    return 0;
}

/* Start the oldest pending copy operation if nothing blocks it. 1 started, 0 not, -1 error. */
static int copy_start(ur_engine *e)
{
    if (e->copy_op >= 0 || !e->pend_len || e->free_head < 0)
        return 0;
    ur_pend *p = &e->pend[e->pend_head];
    if (req_conflict(e, p->seq, p->dev, p->slot, 1, p->write))
        return 0;
    int i = op_alloc(e);
    ur_op *o = &e->ops[i];
    o->kind = OPK_COPY;
    o->dev = p->dev;
    o->write = p->write;
    o->req = -1;
    o->off = p->slot * UR_PAGE;
    o->page = p->page;
    o->len = UR_PAGE;
    o->done = 0;
    o->expect[0] = p->expect;
    if (p->write && stage_take(e, p->page, o->buf) < 0) {
        op_free(e, i);
        return io_fail(e, EINVAL, &e->dev[p->dev], o->off, "internal error: migration write without its read");
    }
    e->copy_seq = p->seq;
    e->pend_head = (e->pend_head + 1) % UR_PEND_CAP;
    e->pend_len--;
    e->copy_op = i;
    if (p->write)
        e->st.copy_pages++;
    return op_submit(e, i) < 0 ? -1 : 1;
}

/* Run the k oldest pending copy operations now (a request depends on them); wait for them. */
static int copy_force(ur_engine *e, size_t k)
{
    for (size_t done = 0; done < k && !e->failed;) {
        while (e->copy_op >= 0 && !e->failed)
            if (reap(e, 1, 0) < 0)
                return -1;
        int rc = copy_start(e);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            done++;
            e->st.copies_forced++;
        } else if (reap(e, 1, 0) < 0)
            return -1;
    }
    while (e->copy_op >= 0 && !e->failed)
        if (reap(e, 1, 0) < 0)
            return -1;
    return e->failed ? -1 : 0;
}

static int bg_kick(ur_engine *e)
{
    int rc = copy_start(e);
    if (rc == 1)
        e->st.copies_bg++;
    return rc < 0 ? -1 : 0;
}

/* Timed mode: wait for the arrival time, running copies meanwhile (idle time). */
static int wait_until(ur_engine *e, int64_t target)
{
    for (;;) {
        if (bg_kick(e) < 0 || reap(e, 0, 0) < 0)
            return -1;
        if (ur_now_ns() >= target)
            return 0;
        if (e->copy_op < 0 && e->pend_len && !e->inflight_ops && e->have_ring)
            continue; /* a psync copy just completed: start the next */
        if (e->inflight_ops || !e->pend_len || e->copy_op >= 0) {
            if (!(e->ring.features & IORING_FEAT_EXT_ARG) && e->inflight_ops) {
                int64_t nap = ur_now_ns() + 20000;
                if (reap(e, 0, 0) < 0)
                    return -1;
                struct timespec ts = {(time_t)(nap / 1000000000), (long)(nap % 1000000000)};
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            } else if (reap(e, 1, target) < 0)
                return -1;
        }
    }
}

static int issue_request(ur_engine *e, double arrival)
{
    ur_req *c = &e->cur;
    int64_t target = 0;
    if (e->timed) {
        if (!e->epoch_set) {
            e->epoch_set = 1;
            e->epoch_ns = ur_now_ns();
            e->epoch_us = arrival;
        }
        target = e->epoch_ns + (int64_t)((arrival - e->epoch_us) * 1000.0);
        if (wait_until(e, target) < 0)
            return -1;
    }
    while (e->nreq_active >= e->qd)
        if (reap(e, 1, 0) < 0)
            return -1;
    int64_t t_issue = ur_now_ns();
    if (e->timed && t_issue > target)
        e->st.host_wait_ns += t_issue - target;
    /* Dependencies: pending copies (run the prefix up to the last conflicting one), the copy in
     * flight, and requests in flight. */
    size_t force = 0;
    for (size_t k = 0; k < e->pend_len; k++) {
        const ur_pend *p = &e->pend[(e->pend_head + k) % UR_PEND_CAP];
        for (int j = 0; j < c->nruns; j++)
            if (overlap(&c->runs[j], p->dev, p->slot, 1, p->write)) {
                force = k + 1;
                break;
            }
    }
    if (force && copy_force(e, force) < 0)
        return -1;
    for (;;) {
        int blocked = 0;
        if (e->copy_op >= 0) {
            const ur_op *o = &e->ops[e->copy_op];
            for (int j = 0; j < c->nruns && !blocked; j++)
                blocked = overlap(&c->runs[j], o->dev, o->off / UR_PAGE, 1, o->write);
        }
        for (int j = 0; j < c->nruns && !blocked; j++)
            blocked = req_conflict(e, c->seq, c->runs[j].dev, c->runs[j].slot, c->runs[j].n, c->runs[j].write);
        if (!blocked)
            break;
        if (reap(e, 1, 0) < 0)
            return -1;
    }
    int64_t t_ready = ur_now_ns();
    e->st.conflict_wait_ns += t_ready - t_issue;
    int slot = 0;
    while (e->reqs[slot].active)
        slot++;
    ur_req *q = &e->reqs[slot];
    ur_run *tmp = q->runs;
    int tcap = q->cap;
    *q = *c; /* take the runs; give cur the slot's old array */
    c->runs = tmp;
    c->cap = tcap;
    c->nruns = 0;
    q->active = 1;
    q->t_issue = t_issue;
    q->t_target = target;
    q->out = e->next_req++;
    q->ops_left = 1; /* held until every op is issued */
    e->nreq_active++;
    e->st.requests++;
    for (int j = 0; j < q->nruns && !e->failed; j++) {
        ur_run *run = &q->runs[j];
        for (uint32_t at = 0; at < run->n && !e->failed;) {
            uint32_t np = run->n - at < UR_CHUNK_PAGES ? run->n - at : UR_CHUNK_PAGES;
            int i;
            while ((i = op_alloc(e)) < 0)
                if (reap(e, 1, 0) < 0)
                    break;
            if (i < 0)
                break;
            ur_op *o = &e->ops[i];
            o->kind = OPK_HOST;
            o->dev = run->dev;
            o->write = run->write;
            o->req = slot;
            o->off = (run->slot + at) * UR_PAGE;
            o->page = run->page + at;
            o->len = np * UR_PAGE;
            o->done = 0;
            for (uint32_t k = 0; e->verify && k < np; k++) {
                if (run->write) {
                    uint32_t v;
                    if (vmap_bump(e, o->page + k, &v) < 0) {
                        op_free(e, i);
                        return io_fail(e, ENOMEM, &e->dev[o->dev], o->off, "out of memory (verify map)");
                    }
                    ur_stamp_page(o->buf + (size_t)k * UR_PAGE, o->page + k, v);
                } else
                    o->expect[k] = ur_version(e, o->page + k);
            }
            q->ops_left++;
            e->st.host_ops++;
            at += np;
            if (op_submit(e, i) < 0)
                break;
        }
    }
    if (--q->ops_left == 0)
        req_done(e, q, 0);
    if (e->have_ring && e->ring.to_submit && ring_enter(e, 0, 0) < 0)
        return io_fail(e, EIO, &e->dev[0], 0, "io_uring_enter failed");
    return e->failed ? -1 : 0;
}

static int drain_all(ur_engine *e)
{
    /* After an error: let everything in flight finish so no buffer is in use. */
    int failed = e->failed;
    e->failed = 0;
    while (e->inflight_ops) {
        if (reap(e, 1, 0) < 0 && e->inflight_ops) {
            if (!e->have_ring || e->ring.fd < 0)
                break;
            e->failed = 0;
        }
    }
    e->failed = failed;
    return -1;
}

int ur_exec(ur_engine *e, const hss_log_ent *log, size_t n, const double *arrivals, size_t narr,
            int wait)
{
    if (e->failed)
        return set_err(e, EIO, NULL, 0, "the engine stopped after an earlier error; close it");
    size_t k = 0;
    for (size_t i = 0; i < n && !e->failed; i++) {
        const hss_log_ent *x = &log[i];
        e->seq++;
        if (x->kind != HSS_LOG_END && (x->dev >= e->ndev || x->n == 0
                                       || x->slot + x->n > e->dev[x->dev].size / UR_PAGE)) {
            if (x->dev >= e->ndev)
                return set_err(e, EINVAL, NULL, 0, "log entry %zu names device %d of %d", i, x->dev, e->ndev);
            io_fail(e, ERANGE, &e->dev[x->dev], x->slot * UR_PAGE,
                    "the HSS maps a page beyond the device's configured size");
            break;
        }
        switch (x->kind) {
        case HSS_LOG_READ:
        case HSS_LOG_WRITE: {
            ur_req *c = &e->cur;
            if (c->nruns == c->cap) {
                int ncap = c->cap ? c->cap * 2 : 8;
                ur_run *nr = realloc(c->runs, (size_t)ncap * sizeof *nr);
                if (!nr)
                    return set_err(e, ENOMEM, NULL, 0, "out of memory");
                c->runs = nr;
                c->cap = ncap;
            }
            c->runs[c->nruns++] = (ur_run){x->page, x->slot, x->n, x->dev, (uint8_t)(x->kind == HSS_LOG_WRITE)};
            break;
        }
        case HSS_LOG_CREAD:
        case HSS_LOG_CWRITE: {
            if (e->pend_len == UR_PEND_CAP && copy_force(e, 1) < 0)
                break;
            ur_pend *p = &e->pend[(e->pend_head + e->pend_len) % UR_PEND_CAP];
            *p = (ur_pend){e->seq, x->page, x->slot, x->kind == HSS_LOG_CREAD ? ur_version(e, x->page) : 0,
                           x->dev, (uint8_t)(x->kind == HSS_LOG_CWRITE)};
            e->pend_len++;
            if (e->pend_len > e->st.pend_max)
                e->st.pend_max = e->pend_len;
            break;
        }
        case HSS_LOG_END:
            if (k >= narr)
                return set_err(e, EINVAL, NULL, 0, "more requests in the log than arrival times (%zu)", narr);
            e->cur.seq = e->seq;
            if (issue_request(e, arrivals[k++]) < 0)
                break;
            if (!e->timed && bg_kick(e) < 0)
                break;
            break;
        default:
            return set_err(e, EINVAL, NULL, 0, "log entry %zu has unknown kind %d", i, x->kind);
        }
    }
    while (wait && e->nreq_active && !e->failed)
        if (reap(e, 1, 0) < 0)
            break;
    if (!e->failed)
        bg_kick(e); /* one copy proceeds while the caller thinks */
    if (e->failed)
        return drain_all(e);
    return 0;
}

int ur_flush(ur_engine *e)
{
    if (e->failed)
        return set_err(e, EIO, NULL, 0, "the engine stopped after an earlier error; close it");
    while (e->nreq_active && !e->failed)
        reap(e, 1, 0);
    if (!e->failed)
        copy_force(e, e->pend_len);
    while (e->inflight_ops && !e->failed)
        reap(e, 1, 0);
    return e->failed ? drain_all(e) : 0;
}

void ur_set_output(ur_engine *e, double *lat, size_t cap)
{
    e->lat = lat;
    e->lat_cap = cap;
    e->out_base = e->next_req;
}

int ur_reset(ur_engine *e)
{
    int rc = e->failed ? 0 : ur_flush(e);
    e->pend_head = e->pend_len = 0;
    e->nstage = 0;
    e->copy_op = -1;
    if (e->vmap)
        memset(e->vmap, 0, e->vmap_cap * sizeof *e->vmap);
    e->vmap_len = 0;
    e->next_req = e->out_base = 0;
    e->epoch_set = 0;
    e->cur.nruns = 0;
    e->verify_msg[0] = '\0';
    e->lat = NULL;
    e->lat_cap = 0;
    memset(&e->st, 0, sizeof e->st);
    return rc;
}

/* ------------------------------------------------------------------ devices */

static int dev_open(ur_engine *e, ur_dev *d, const char *path, uint64_t size, int engine, int flags)
{
    struct stat st;
    d->fd = -1;
    d->fixed = -1;
    if (strlen(path) >= sizeof d->path)
        return set_err(e, ENAMETOOLONG, NULL, 0, "device path too long");
    snprintf(d->path, sizeof d->path, "%s", path);
    if (size == 0 || size % UR_PAGE)
        return set_err(e, EINVAL, d, 0, "size %llu must be a positive multiple of 4096",
                       (unsigned long long)size);
    d->size = size;
    if (stat(path, &st) == 0) {
        if (S_ISBLK(st.st_mode)) {
            if (!(flags & UR_O_ALLOW_BLOCK))
                return set_err(e, EPERM, d, 0, "refusing a block device (pass allow_block_device=True)");
            /* O_EXCL on a block device: the kernel refuses it when mounted or held (EBUSY) */
            d->fd = open(path, O_RDWR | O_EXCL | O_CLOEXEC);
            if (d->fd < 0)
                return set_err(e, errno, d, 0, "cannot open the block device exclusively");
            uint64_t bytes = 0;
            if (ioctl(d->fd, BLKGETSIZE64, &bytes) < 0)
                return set_err(e, errno, d, 0, "cannot read the block device's size");
            if (bytes < size)
                return set_err(e, ENOSPC, d, 0, "the block device holds %llu bytes, fewer than the configured %llu",
                               (unsigned long long)bytes, (unsigned long long)size);
            d->is_blk = 1;
        } else if (S_ISREG(st.st_mode)) {
            if (st.st_size > 0 && !(flags & UR_O_OVERWRITE))
                return set_err(e, EEXIST, d, 0, "refusing an existing non-empty file (%lld bytes; pass overwrite=True)",
                               (long long)st.st_size);
            d->fd = open(path, O_RDWR | O_CLOEXEC);
            if (d->fd < 0)
                return set_err(e, errno, d, 0, "cannot open");
        } else
            return set_err(e, EINVAL, d, 0, "not a regular file or a block device");
    } else if (errno == ENOENT && (flags & UR_O_CREATE)) {
        d->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (d->fd < 0)
            return set_err(e, errno, d, 0, "cannot create");
        d->created = 1;
    } else
        return set_err(e, errno, d, 0, "cannot stat");
    /* Regular files are sized sparse: blocks are allocated as the run writes them, so a
     * killed run leaves only what it wrote (a 4 GiB slow device was fully allocated up front). A
     * file is never shrunk. */
    if (!d->is_blk && fstat(d->fd, &st) == 0 && (uint64_t)st.st_size < size
        && ftruncate(d->fd, (off_t)size) < 0)
        return set_err(e, errno, d, 0, "cannot size the file to %llu bytes", (unsigned long long)size);
    /* Direct I/O alignment from statx; 4096 when the kernel does not say. */
    struct statx sx;
    int dio_ok = 1;
    d->mem_align = d->off_align = UR_PAGE;
    const char *why = "";
    if (statx(d->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0) {
            dio_ok = 0;
            why = "buffered: the filesystem does not support O_DIRECT (statx)";
        } else {
            d->mem_align = sx.stx_dio_mem_align;
            d->off_align = sx.stx_dio_offset_align;
            if (d->off_align > UR_PAGE || d->mem_align > UR_PAGE) {
                dio_ok = 0;
                why = "buffered: O_DIRECT alignment exceeds the 4 KiB page";
            }
        }
    } else
        why = "no STATX_DIOALIGN; assuming 4096-byte alignment";
    if (flags & UR_O_NO_DIRECT) {
        dio_ok = 0;
        why = "buffered: direct=False";
    }
    if (dio_ok) {
        int fl = fcntl(d->fd, F_GETFL);
        if (fl >= 0 && fcntl(d->fd, F_SETFL, fl | O_DIRECT) == 0)
            d->direct = 1;
        else
            why = "buffered: O_DIRECT refused by the filesystem";
    }
    if (!d->direct && (flags & UR_O_REQUIRE_DIRECT))
        return set_err(e, EINVAL, d, 0, "direct=True but O_DIRECT is unavailable (%s)", why);
    struct statfs sf;
    int tmpfs = fstatfs(d->fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
    d->engine = engine >= 0 ? engine : (tmpfs ? UR_ENGINE_PSYNC : UR_ENGINE_URING);
    snprintf(d->note, sizeof d->note, "%s%s%s", d->direct ? "O_DIRECT" : why,
             d->engine == UR_ENGINE_PSYNC ? "; psync engine" : "; io_uring engine",
             engine < 0 && tmpfs ? " (auto: tmpfs, where pread/pwrite cost far less than io_uring)" : "");
    return 0;
}

int ur_unlink_created(ur_engine *e)
{
    int linked = 0;
    for (int i = 0; i < e->ndev; i++) {
        ur_dev *d = &e->dev[i];
        if (!d->created || d->unlinked || d->fd < 0)
            continue;
        struct stat open_st, path_st;
        if (fstat(d->fd, &open_st) < 0 || lstat(d->path, &path_st) < 0
            || open_st.st_dev != path_st.st_dev || open_st.st_ino != path_st.st_ino) {
            linked++; /* the name is gone or names another file now: never ours to remove */
            continue;
        }
        if (unlink(d->path) < 0) {
            linked++; /* it stays, removed on close as before */
            continue;
        }
        d->unlinked = 1;
    }
    return linked;
}

void ur_close(ur_engine *e, int remove_created)
{
    if (e->have_ring) {
        if (!e->failed)
            ur_flush(e);
        else
            drain_all(e);
        ring_exit(&e->ring);
        e->have_ring = 0;
    }
    for (int i = 0; i < e->ndev; i++) {
        ur_dev *d = &e->dev[i];
        if (d->fd >= 0)
            close(d->fd);
        d->fd = -1;
        if (remove_created && d->created && !d->unlinked)
            unlink(d->path);
        d->created = d->unlinked = 0;
    }
    e->ndev = 0;
    if (e->bufs)
        munmap(e->bufs, e->bufs_len);
    e->bufs = NULL;
    for (int k = 0; e->reqs && k < e->qd; k++)
        free(e->reqs[k].runs);
    free(e->reqs);
    e->reqs = NULL;
    free(e->cur.runs);
    e->cur.runs = NULL;
    free(e->ops);
    e->ops = NULL;
    free(e->pend);
    e->pend = NULL;
    for (size_t k = 0; k < e->stage_cap; k++)
        free(e->stage[k].buf);
    free(e->stage);
    e->stage = NULL;
    e->stage_cap = e->nstage = 0;
    free(e->vmap);
    e->vmap = NULL;
    e->vmap_cap = e->vmap_len = 0;
}

int ur_open(ur_engine *e, int ndev, const char *const *paths, const uint64_t *sizes,
            const int *engines, int flags, int qd, int verify, int timed)
{
    memset(e, 0, sizeof *e);
    e->ring.fd = -1;
    e->copy_op = -1;
    e->free_head = -1;
    if (ndev < 1 || ndev > UR_MAX_DEV)
        return set_err(e, EINVAL, NULL, 0, "between 1 and %d devices are supported, got %d", UR_MAX_DEV, ndev);
    if (qd < 1 || qd > UR_MAX_QD)
        return set_err(e, EINVAL, NULL, 0, "queue depth must be in 1..%d, got %d", UR_MAX_QD, qd);
    for (int i = 0; i < UR_MAX_DEV; i++)
        e->dev[i].fd = -1;
    e->qd = qd;
    e->verify = verify;
    e->timed = timed;
    char err[sizeof e->err];
    int err_no = 0;
    for (int i = 0; i < ndev; i++) {
        e->ndev = i + 1;
        if (dev_open(e, &e->dev[i], paths[i], sizes[i], engines[i], flags) < 0)
            goto fail;
        for (int j = 0; j < i; j++) {
            struct stat a, b;
            if (fstat(e->dev[i].fd, &a) == 0 && fstat(e->dev[j].fd, &b) == 0 && a.st_dev == b.st_dev
                && a.st_ino == b.st_ino) {
                set_err(e, EINVAL, &e->dev[i], 0, "the same file is given as devices %d and %d", j, i);
                goto fail;
            }
        }
    }
    unsigned want = 8;
    while (want < (unsigned)qd)
        want *= 2;
    e->nops = want;
    int need_ring = 0;
    for (int i = 0; i < ndev; i++)
        need_ring |= e->dev[i].engine == UR_ENGINE_URING;
    if (need_ring) {
        int rc = ring_init(&e->ring, want);
        if (rc < 0) {
            char why[256];
            ur_probe(why, sizeof why);
            set_err(e, -rc, NULL, 0, "io_uring unavailable (%s); engine='psync' works without it", why);
            goto fail;
        }
        e->have_ring = 1;
        e->nops = e->ring.sq_entries < want ? e->ring.sq_entries : want;
    }
    e->bufs_len = (size_t)e->nops * UR_CHUNK;
    e->bufs = mmap(NULL, e->bufs_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    e->ops = calloc(e->nops, sizeof *e->ops);
    e->reqs = calloc((size_t)qd, sizeof *e->reqs);
    e->pend = calloc(UR_PEND_CAP, sizeof *e->pend);
    if (e->bufs == MAP_FAILED || !e->ops || !e->reqs || !e->pend) {
        if (e->bufs == MAP_FAILED)
            e->bufs = NULL;
        set_err(e, ENOMEM, NULL, 0, "cannot allocate I/O buffers");
        goto fail;
    }
    memset(e->bufs, 0, e->bufs_len);
    for (unsigned i = 0; i < e->nops; i++) {
        e->ops[i].buf = e->bufs + (size_t)i * UR_CHUNK;
        e->ops[i].next_free = i + 1 < e->nops ? (int)i + 1 : -1;
    }
    e->free_head = 0;
    if (e->have_ring) {
        struct iovec *iov = calloc(e->nops, sizeof *iov);
        if (iov) {
            for (unsigned i = 0; i < e->nops; i++) {
                iov[i].iov_base = e->ops[i].buf;
                iov[i].iov_len = UR_CHUNK;
            }
            e->ring.fixed_bufs = sys_register(e->ring.fd, IORING_REGISTER_BUFFERS, iov, e->nops) == 0;
            free(iov);
        }
        int fds[UR_MAX_DEV], nf = 0;
        for (int i = 0; i < ndev; i++)
            if (e->dev[i].engine == UR_ENGINE_URING) {
                e->dev[i].fixed = nf;
                fds[nf++] = e->dev[i].fd;
            }
        e->ring.fixed_files = sys_register(e->ring.fd, IORING_REGISTER_FILES, fds, (unsigned)nf) == 0;
    }
    return 0;
fail:
    err_no = e->err_no;
    memcpy(err, e->err, sizeof err);
    ur_close(e, 1);
    e->err_no = err_no;
    memcpy(e->err, err, sizeof err);
    return -1;
}

/* ------------------------------------------------------------------ benchmark and verify */

int ur_bench(ur_engine *e, int d, int write, uint32_t bs, int qd, uint64_t n, int seq,
             uint64_t seed, int64_t *elapsed_ns, int64_t *lat_ns)
{
    if (d < 0 || d >= e->ndev)
        return set_err(e, EINVAL, NULL, 0, "no device %d", d);
    ur_dev *dv = &e->dev[d];
    if (bs == 0 || bs % UR_PAGE || bs > UR_CHUNK || bs > dv->size)
        return set_err(e, EINVAL, NULL, 0, "block size must be a multiple of 4096 up to %u", UR_CHUNK);
    if (qd < 1 || (unsigned)qd > e->nops)
        return set_err(e, EINVAL, NULL, 0, "bench queue depth must be in 1..%u", e->nops);
    if (ur_flush(e) < 0)
        return -1;
    uint64_t span = dv->size / UR_PAGE - bs / UR_PAGE + 1, rng = seed * 2 + 1, next_seq = 0;
    uint64_t submitted = 0, completed = 0;
    int64_t t_start = ur_now_ns();
    if (dv->engine == UR_ENGINE_PSYNC || !e->have_ring) {
        char *buf = e->ops[0].buf;
        for (; completed < n; completed++) {
            uint64_t off = seq ? (next_seq++ % span) * UR_PAGE : (mix64(rng++) % span) * UR_PAGE;
            int64_t t0 = lat_ns ? ur_now_ns() : 0;
            ssize_t k;
            do
                k = write ? pwrite(dv->fd, buf, bs, (off_t)off) : pread(dv->fd, buf, bs, (off_t)off);
            while (k < 0 && errno == EINTR);
            if (k != (ssize_t)bs)
                return set_err(e, k < 0 ? errno : EIO, dv, off, write ? "write failed" : "read failed");
            if (lat_ns)
                lat_ns[completed] = ur_now_ns() - t0;
        }
        *elapsed_ns = ur_now_ns() - t_start;
        return 0;
    }
    ur_ring *r = &e->ring;
    uint64_t *idx_of = calloc(e->nops, sizeof *idx_of);
    if (!idx_of)
        return set_err(e, ENOMEM, NULL, 0, "out of memory");
    int in_flight = 0, rc = 0;
    while (completed < n) {
        int64_t tsub = lat_ns ? ur_now_ns() : 0;
        while (submitted < n && in_flight < qd) {
            int i = op_alloc(e);
            ur_op *o = &e->ops[i];
            o->kind = OPK_BENCH;
            o->dev = d;
            o->write = write;
            o->off = seq ? (next_seq++ % span) * UR_PAGE : (mix64(rng++) % span) * UR_PAGE;
            o->len = bs;
            o->done = 0;
            o->t0 = tsub;
            idx_of[i] = submitted++;
            if (op_submit(e, i) < 0) {
                rc = -1;
                goto out;
            }
            in_flight++;
        }
        int er = ring_enter(e, 1, 0);
        if (er < 0) {
            rc = set_err(e, -er, NULL, 0, "io_uring_enter failed");
            goto out;
        }
        unsigned head = *r->cq_head, tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
        int64_t now = lat_ns ? ur_now_ns() : 0;
        struct io_uring_cqe *cqes = r->cqes;
        for (; head != tail; head++) {
            struct io_uring_cqe c = cqes[head & *r->cq_mask];
            int i = (int)c.user_data;
            ur_op *o = &e->ops[i];
            e->inflight_ops--;
            if (c.res == -EAGAIN || c.res == -EINTR) {
                dv->retries++;
                op_submit(e, i);
                continue;
            }
            if (c.res < 0 || (uint32_t)c.res < o->len - o->done) {
                if (c.res > 0) { /* short: resubmit the rest */
                    dv->short_ios++;
                    o->done += (uint32_t)c.res;
                    op_submit(e, i);
                    continue;
                }
                __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
                rc = set_err(e, c.res < 0 ? -c.res : EIO, dv, o->off, write ? "write failed" : "read failed");
                op_free(e, i);
                in_flight--;
                goto out;
            }
            if (lat_ns)
                lat_ns[idx_of[i]] = now - o->t0;
            op_free(e, i);
            in_flight--;
            completed++;
        }
        __atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
    }
out:
    *elapsed_ns = ur_now_ns() - t_start;
    while (e->inflight_ops) { /* after an error: wait for the rest */
        if (ring_enter(e, 1, 0) < 0)
            break;
        unsigned head = *r->cq_head, tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++) {
            op_free(e, (int)((struct io_uring_cqe *)r->cqes)[head & *r->cq_mask].user_data);
            e->inflight_ops--;
        }
        __atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
    }
    free(idx_of);
    return rc;
}

int ur_verify(ur_engine *e, size_t n, const uint64_t *pages, const uint8_t *devs,
              const uint64_t *slots, uint64_t *lost, uint64_t *corrupt)
{
    *lost = *corrupt = 0;
    if (ur_flush(e) < 0)
        return -1;
    char *buf = e->ops[0].buf; /* idle engine: any op buffer is free (aligned for O_DIRECT) */
    for (size_t i = 0; i < n; i++) {
        uint32_t want = ur_version(e, pages[i]), found;
        if (devs[i] >= e->ndev)
            return set_err(e, EINVAL, NULL, 0, "page %llu: no device %d", (unsigned long long)pages[i], devs[i]);
        ur_dev *d = &e->dev[devs[i]];
        uint64_t off = slots[i] * UR_PAGE;
        if (off + UR_PAGE > d->size)
            return set_err(e, ERANGE, d, off, "page %llu mapped outside the device", (unsigned long long)pages[i]);
        ssize_t k;
        do
            k = pread(d->fd, buf, UR_PAGE, (off_t)off);
        while (k < 0 && errno == EINTR);
        if (k != UR_PAGE)
            return set_err(e, k < 0 ? errno : EIO, d, off, "verify read failed");
        if (!want)
            continue;
        e->st.verify_checked++;
        int rc = ur_check_page(buf, pages[i], want, &found);
        if (rc == 1)
            (*lost)++;
        else if (rc == 2)
            (*corrupt)++;
        if (rc)
            verify_fail(e, d, off, pages[i], want, found, rc, "final check");
    }
    return 0;
}
