/* Per-page credit of a C51 agent: see page_credit.h. */
#include "page_credit.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash(int64_t page)
{
    uint64_t z = (uint64_t)page * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(z >> 32);
}

int pc_init(page_credit *c, int nin, double gamma, int64_t horizon, int64_t idle_horizon, int64_t expire_every,
            pc_emit_fn emit, void *ctx)
{
    memset(c, 0, sizeof *c);
    c->nin = nin;
    c->gamma = gamma;
    c->horizon = horizon;
    c->idle_horizon = idle_horizon;
    c->expire_every = expire_every;
    c->emit = emit;
    c->ctx = ctx;
    c->head = c->tail = c->ihead = c->itail = c->free_head = -1;
    c->mask = 63;
    c->slots = calloc(c->mask + 1, sizeof *c->slots);
    return c->slots ? 0 : -1;
}

void pc_free(page_credit *c)
{
    free(c->e);
    free(c->obs);
    free(c->slots);
    c->e = NULL;
    c->obs = NULL;
    c->slots = NULL;
}

size_t pc_bytes(const page_credit *c)
{
    return (size_t)c->cap * (sizeof(pc_entry) + (size_t)c->nin * sizeof(float)) + (size_t)(c->mask + 1) * sizeof(int32_t);
}

int pc_find(const page_credit *c, int64_t page)
{
    for (uint32_t i = hash(page) & c->mask;; i = (i + 1) & c->mask) {
        int32_t s = c->slots[i];
        if (!s)
            return -1;
        if (c->e[s - 1].page == page)
            return s - 1;
    }
}

static void slot_put(int32_t *slots, uint32_t mask, int64_t page, int k)
{
    uint32_t i = hash(page) & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = k + 1;
}

/* Remove page's slot (linear probing: shift the following cluster back, no tombstones). */
static void slot_del(page_credit *c, int64_t page)
{
    uint32_t i = hash(page) & c->mask;
    while (c->e[c->slots[i] - 1].page != page)
        i = (i + 1) & c->mask;
    for (uint32_t j = i;;) {
        c->slots[i] = 0;
        for (;;) {
            j = (j + 1) & c->mask;
            if (!c->slots[j])
                return;
            uint32_t home = hash(c->e[c->slots[j] - 1].page) & c->mask;
            /* the entry at j may move to i if its home is not in (i, j] (cyclically) */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        c->slots[i] = c->slots[j];
        i = j;
    }
}

static int grow(page_credit *c)
{
    int cap = c->cap ? 2 * c->cap : 256;
    pc_entry *e = realloc(c->e, (size_t)cap * sizeof *e);
    if (!e)
        return -1;
    c->e = e;
    float *obs = realloc(c->obs, (size_t)cap * (size_t)c->nin * sizeof *obs);
    if (!obs)
        return -1;
    c->obs = obs;
    for (int k = cap - 1; k >= c->cap; k--) {
        e[k].next = c->free_head;
        c->free_head = k;
    }
    c->cap = cap;
    uint32_t size = c->mask + 1;
    if ((uint32_t)cap * 2 > size) {  /* keep the table at most half full */
        while ((uint32_t)cap * 2 > size)
            size *= 2;
        int32_t *slots = calloc(size, sizeof *slots);
        if (!slots)
            return -1;
        for (int k = c->head; k >= 0; k = e[k].next)
            slot_put(slots, size - 1, e[k].page, k);
        free(c->slots);
        c->slots = slots;
        c->mask = size - 1;
    }
    return 0;
}

static void unlink_open(page_credit *c, int k)
{
    pc_entry *e = c->e;
    if (e[k].prev >= 0)
        e[e[k].prev].next = e[k].next;
    else
        c->head = e[k].next;
    if (e[k].next >= 0)
        e[e[k].next].prev = e[k].prev;
    else
        c->tail = e[k].prev;
}

static void append_open(page_credit *c, int k)
{
    c->e[k].prev = c->tail;
    c->e[k].next = -1;
    if (c->tail >= 0)
        c->e[c->tail].next = k;
    else
        c->head = k;
    c->tail = k;
}

static void unlink_idle(page_credit *c, int k)
{
    pc_entry *e = c->e;
    if (!e[k].idle)
        return;
    e[k].idle = 0;
    if (e[k].iprev >= 0)
        e[e[k].iprev].inext = e[k].inext;
    else
        c->ihead = e[k].inext;
    if (e[k].inext >= 0)
        e[e[k].inext].iprev = e[k].iprev;
    else
        c->itail = e[k].iprev;
}

static void append_idle(page_credit *c, int k)
{
    c->e[k].idle = 1;
    c->e[k].iprev = c->itail;
    c->e[k].inext = -1;
    if (c->itail >= 0)
        c->e[c->itail].inext = k;
    else
        c->ihead = k;
    c->itail = k;
}

/* Take entry k out of the table (to the free list) and emit it as terminal. */
static int close_terminal(page_credit *c, int k)
{
    pc_entry *t = &c->e[k];
    slot_del(c, t->page);
    unlink_open(c, k);
    unlink_idle(c, k);
    t->next = c->free_head;
    c->free_head = k;
    c->count--;
    const float *obs = c->obs + (size_t)k * c->nin;  /* stays valid: nothing reuses k during emit */
    return c->emit(c->ctx, obs, t->action, t->ret, obs, 0.0);
}

int pc_decision(page_credit *c, int64_t page, const float *obs, int action, double reward, int64_t step,
                double disc, int tag)
{
    int k = pc_find(c, page);
    if (k >= 0) {  /* the page's open transition ends here, bootstrapping from this decision */
        pc_entry *t = &c->e[k];
        unlink_open(c, k);
        unlink_idle(c, k);
        if (c->emit(c->ctx, c->obs + (size_t)k * c->nin, t->action, t->ret, obs, t->disc) < 0) {
            slot_del(c, page);
            t->next = c->free_head;
            c->free_head = k;
            c->count--;
            return -1;
        }
    } else {
        if (c->free_head < 0 && grow(c) < 0)
            return -1;
        k = c->free_head;
        c->free_head = c->e[k].next;
        c->e[k].page = page;
        c->e[k].idle = 0;
        slot_put(c->slots, c->mask, page, k);
        c->count++;
    }
    pc_entry *t = &c->e[k];
    memcpy(c->obs + (size_t)k * c->nin, obs, (size_t)c->nin * sizeof(float));
    t->action = action;
    t->ret = reward;
    t->disc = disc;
    t->step = step;
    t->tag = tag;
    append_open(c, k);
    if (c->idle_horizon >= 0)
        append_idle(c, k);
    return 0;
}

void pc_access(page_credit *c, int64_t page, double reward)
{
    int k = pc_find(c, page);
    if (k < 0)
        return;
    pc_entry *t = &c->e[k];
    t->ret += t->disc * reward;
    t->disc *= c->gamma;
    unlink_idle(c, k);
}

int pc_end(page_credit *c, int64_t page)
{
    int k = pc_find(c, page);
    return k < 0 ? 0 : close_terminal(c, k);
}

int pc_expire(page_credit *c, int64_t step)
{
    if (step < c->next_expiry)
        return 0;
    c->next_expiry = step + c->expire_every;
    while (c->ihead >= 0 && step - c->e[c->ihead].step >= c->idle_horizon)  /* not accessed since */
        if (close_terminal(c, c->ihead) < 0)
            return -1;
    while (c->head >= 0 && step - c->e[c->head].step >= c->horizon)  /* past the horizon */
        if (close_terminal(c, c->head) < 0)
            return -1;
    return 0;
}
