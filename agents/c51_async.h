/* Gradient steps of a C51 trainer in a background thread, with results that do not depend on
 * thread timing.
 *
 * The agent's thread keeps acting and pushing transitions while a worker thread takes the
 * minibatch steps. Each step's minibatch is drawn and copied out of the replay buffer when the
 * step is submitted (c51_async_submit), so later pushes cannot change it; the worker runs the
 * steps one after the other, in submission order, on the trainer's training network (Adam
 * included), exactly as the synchronous c51_gradients() + c51_adam() would. When the owner needs
 * the steps done (a flush) or room (a full queue), it runs the oldest queued steps itself while
 * the worker runs none (one step at a time, in order, whichever thread runs it), so on a loaded
 * machine it does not sleep waiting for a worker that waits for a CPU. The owner empties the
 * queue (c51_async_flush) before it reads or changes what the worker uses: the
 * training network's weights, the target network, the trainer itself. The target cache belongs
 * to the worker while steps are queued; a cached target is keyed by the transition's version
 * (c51_replay.ver), so a slot overwritten after the step was submitted is never mistaken for it.
 *
 * Without POSIX threads (or when a thread cannot be started) the steps run at submission.
 */
#ifndef C51_ASYNC_H
#define C51_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "c51_kernel.h"

typedef struct c51_async c51_async;

/* A queue of up to `queue` steps of trainer t (borrowed; it must outlive the queue) for
 * observations of nin floats, with t's target cache `cache` (mcache, mgen, mver; borrowed, may be
 * NULL). NULL when out of memory. The worker thread starts with the first submitted step. */
c51_async *c51_async_new(c51_trainer *t, int nin, int queue, float *mcache, int64_t *mgen, int64_t *mver);

/* Stop the worker after the queued steps and free the queue (not the trainer). */
void c51_async_free(c51_async *a);

/* Queue one step on the minibatch idx[0..batch-1] of rb (rb->ver: each slot's version; rb->disc
 * NULL: gamma), with rewards scaled by `scale` and clipped to [r_lo, r_hi], recorded as taken
 * after `experiences` transitions. Waits while the queue is full. */
void c51_async_submit(c51_async *a, const c51_replay *rb, const int64_t *idx, double scale, double r_lo,
                      double r_hi, long long experiences);

/* Wait until every queued step is done. */
void c51_async_flush(c51_async *a);

/* After a flush: the (experiences, loss) of the steps done since the last take, oldest first; the
 * arrays stay valid until the next call into the queue. Returns how many. */
size_t c51_async_take(c51_async *a, const long long **experiences, const double **losses);

/* Bytes the queue holds (minibatch copies, results). */
size_t c51_async_bytes(const c51_async *a);

#endif
