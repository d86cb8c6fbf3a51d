/* Gradient steps of a C51 trainer in a background thread, with results that do not depend on
 * thread timing.
 *
 * The agent's thread keeps acting and pushing transitions while a worker thread takes the
 * minibatch steps. Each step's minibatch is drawn when the step is submitted
 * (c51_async_submit); the queue keeps its slot numbers only, and the step's rows are gathered
 * when it starts. The rows it drew must then be those of the submission: the owner pushes
 * through c51_async_push, which saves a row it overwrites into a ring of shadow rows while steps
 * submitted before the push wait (the step reads it from there). So a queued step costs 4 bytes
 * per minibatch row instead of a copy of the rows, and a burst of steps (an expiry that ends
 * many transitions at once) fits in the queue without the owner taking them itself. The worker
 * runs the steps one after the other, in submission order, on the trainer's training network
 * (Adam included), exactly as the synchronous c51_gradients() + c51_adam() would. When the owner
 * needs the steps done (a flush) or room (a full queue, or a full shadow ring), it runs the oldest
 * queued steps itself while the worker runs none (one step at a time, in order, whichever thread
 * runs it), so on a loaded machine it does not sleep waiting for a worker that waits for a CPU.
 * The owner empties the queue (c51_async_flush) before it reads or changes what the worker uses:
 * the training network's weights, the target network, the trainer itself. The target cache
 * belongs to the worker while steps are queued; a cached target is keyed by the transition's
 * version (c51_replay.ver), so a slot overwritten after the step was submitted is never mistaken
 * for it.
 *
 * Without POSIX threads (or when a thread cannot be started) the steps run at submission.
 */
#ifndef C51_ASYNC_H
#define C51_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "c51_kernel.h"

typedef struct c51_async c51_async;

/* A queue of up to `queue` steps of trainer t (borrowed; it must outlive the queue) on the replay
 * ring rb of `cap` slots (borrowed: its arrays and rb->ver must outlive the queue; rb->disc NULL:
 * gamma), with `shadow` rows for the rows overwritten while steps wait. Observations have nin
 * floats. NULL when out of memory. The worker thread starts with the first submitted step. */
c51_async *c51_async_new(c51_trainer *t, const c51_replay *rb, int cap, int nin, int queue, int shadow);

/* Stop the worker after the queued steps and free the queue (not the trainer). */
void c51_async_free(c51_async *a);

/* Store transition number `pushed` (0, 1, ...) in slot pushed % cap of the replay ring: obs and
 * next (nin floats each), action, reward, discount (ignored without rb->disc) and version. Every
 * push of the ring's owner goes through here once the queue exists. */
void c51_async_push(c51_async *a, long long pushed, const float *obs, const float *next, int64_t action,
                    float reward, float discount, int64_t version);

/* Queue one step on the slots idx[0..batch-1] of the ring, with target cache generation `gen`,
 * rewards scaled by `scale` and clipped to [r_lo, r_hi], after `experiences` transitions were
 * pushed (recorded with its loss). Waits while the queue is full. */
void c51_async_submit(c51_async *a, const int64_t *idx, int64_t gen, double scale, double r_lo, double r_hi,
                      long long experiences);

/* Wait until every queued step is done. */
void c51_async_flush(c51_async *a);

/* After a flush: the (experiences, loss) of the steps done since the last take, oldest first; the
 * arrays stay valid until the next call into the queue. Returns how many. */
size_t c51_async_take(c51_async *a, const long long **experiences, const double **losses);

/* Bytes the queue holds (slot numbers, shadow rows, the running step's rows, results). */
size_t c51_async_bytes(const c51_async *a);

#endif
