/* minfer_session_schedule_info: the scheduler and what it does with the
 * most recently used plan (docs/scheduling.md). */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "exec/sched.h"
#include "session/session.h"

minfer_status minfer_session_schedule_info(const minfer_session *cs, minfer_schedule_info *out) {
    if (!cs || !out || out->struct_size < offsetof(minfer_schedule_info, has_plan))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_session_schedule_info: NULL argument or struct_size too small");
    minfer_session *s = (minfer_session *)cs; /* the lock is not part of the value */
    minfer_schedule_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = out->struct_size < sizeof info ? out->struct_size : sizeof info;
    info.scheduler = s->scheduler;
    info.inter_op_threads = s->scheduler == MINFER_SCHED_PARALLEL ? s->inter_op : 1;
    info.why_sequential = "";
    pthread_mutex_lock(&s->lock);
    const mf_plan *p = s->cache.last;
    if (p) {
        info.has_plan = 1;
        info.concurrent = p->conc != NULL;
        if (p->conc) {
            info.queue_runs = atomic_load_explicit(&p->conc->queue_runs[0], memory_order_relaxed);
            info.overlapped_runs =
                atomic_load_explicit(&p->conc->queue_runs[1], memory_order_relaxed);
        }
        if (p->conc_why)
            info.why_sequential = p->conc_why;
        for (size_t d = 0; d < s->n_domains; d++) {
            info.arena_bytes += p->arena_bytes[d];
            info.sequential_arena_bytes +=
                p->conc && p->conc->seq_arena[d] ? p->conc->seq_arena[d] : p->arena_bytes[d];
        }
    }
    pthread_mutex_unlock(&s->lock);
    memcpy(out, &info, info.struct_size);
    return MINFER_OK;
}
