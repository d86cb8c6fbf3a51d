/* Per-page credit of a C51 agent in C: the open transitions of agents/credit.py's PageCredit.
 *
 * One open transition per page, [obs, action, return, discount, decision step, tag], kept in the
 * order of their decisions (the oldest ends first at the horizon) and, when an idle horizon is set,
 * in a second list of those whose page was not accessed since its decision. A hash table maps a
 * page to its transition. Every operation is O(1) (expire: per transition it ends), so the
 * per-request bookkeeping costs no allocation once the table has grown to the number of open
 * transitions (a few thousand).
 *
 * A transition that ends is handed to the caller's `emit` callback (store it in the replay buffer):
 * emit(ctx, obs, action, return, next_obs, discount) with discount 0 for a terminal transition
 * (next_obs is then obs). The arithmetic is that of the Python reference it replaces, in double
 * precision, in the same order, so results are bit for bit the same.
 */
#ifndef PAGE_CREDIT_H
#define PAGE_CREDIT_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0, or -1 to stop (the operation then returns -1; the transition has left the table). */
typedef int (*pc_emit_fn)(void *ctx, const float *obs, int action, double ret, const float *next, double disc);

typedef struct {
    int64_t page, step;
    double ret, disc;
    int action, tag;
    int prev, next;   /* decision order (-1: none) */
    int iprev, inext; /* idle order (-1: none) */
    int idle;         /* in the idle list */
} pc_entry;

typedef struct {
    int nin;                     /* floats per observation */
    double gamma;
    int64_t horizon, idle_horizon; /* idle_horizon < 0: no idle horizon */
    int64_t expire_every, next_expiry;
    pc_entry *e;                 /* entries; a free entry's `next` links the free list */
    float *obs;                  /* nin floats per entry */
    int cap, count, free_head;
    int head, tail, ihead, itail;
    int32_t *slots;              /* hash table: entry index + 1, 0 empty (linear probing) */
    uint32_t mask;
    pc_emit_fn emit;
    void *ctx;
} page_credit;

/* 0, or -1 when out of memory. idle_horizon < 0: none. */
int pc_init(page_credit *c, int nin, double gamma, int64_t horizon, int64_t idle_horizon, int64_t expire_every,
            pc_emit_fn emit, void *ctx);
void pc_free(page_credit *c);

/* Bytes the table holds (entries, observations, hash slots). */
size_t pc_bytes(const page_credit *c);

/* The entry of page, or -1. */
int pc_find(const page_credit *c, int64_t page);

/* A decision on page: its open transition (if any) ends, bootstrapping from obs with its
 * accumulated discount; a new one opens with the decision's own reward and discount `disc`
 * (gamma unless told otherwise) and `tag`. 0, or -1 (emit failed, or out of memory). */
int pc_decision(page_credit *c, int64_t page, const float *obs, int action, double reward, int64_t step,
                double disc, int tag);

/* An access of page that no decision handled: its reward joins the open return, discounted. */
void pc_access(page_credit *c, int64_t page, double reward);

/* End page's open transition, terminal. 0 (also when none is open), or -1 (emit failed). */
int pc_end(page_credit *c, int64_t page);

/* End the transitions past their horizons (checked every expire_every requests). 0 or -1. */
int pc_expire(page_credit *c, int64_t step);

#endif
