/*
 * Placement: the session tree's providers (mf_placement, place/state.h)
 * and the provider of each node (place/place.c). Included by plan/, exec/
 * and session/. Every question to a provider whether it runs a node goes
 * through mf_place_supports.
 *
 *     mf_place_open(s, opt);                 // s->pl->provs, s->pl->eval
 *     mf_place_node(s, i, &desc);            // s->assign[i], s->declined[i]
 *     mf_place_check_strict(s);
 *     // a prepare that failed on provider j:
 *     mf_place_fallback(s, i, j, &desc, st, why, ro, &next);  // or an error
 */
#ifndef MINFER_CORE_PLACE_H
#define MINFER_CORE_PLACE_H

#include "place/state.h"

/* Opens the providers of the preference list (opt's, else MINFER_PROVIDERS,
 * else the default order) into s->pl->provs, and the evaluator (s->pl->eval) used
 * for constant folding. Uses s->pl->api as the host table. */
minfer_status mf_place_open(minfer_session *s, const minfer_options *opt);
/* Closes the providers and the evaluator of pl and frees it (NULL: nothing). */
void mf_place_close(mf_placement *pl);

/* Whether provider pi (one of a placement's, or its evaluator) runs the
 * node desc describes (its supports_operator); why gets its reason when
 * not. The one place the core asks. */
int mf_place_supports(const mf_provider_inst *pi, const minfer_node_desc *desc, char *why,
                      size_t why_size);

/* Assigns node i (described by desc) to the first provider that accepts it,
 * keeping why the earlier ones declined in s->declined[i]; an error naming
 * the node and every reason when none does. */
minfer_status mf_place_node(minfer_session *s, int i, const minfer_node_desc *desc);

/* Under strict placement, an error listing every node that fell back past
 * the first provider; MINFER_OK otherwise. */
minfer_status mf_place_check_strict(minfer_session *s);

/* Provider `failed` accepted node i but could not prepare it (st, why: its
 * status and message; a provider out of memory or another resource is
 * such a failure too). *next becomes the next provider after it in the list
 * that supports desc, with one warning naming node, op, provider and
 * reason (logged with the run's options ro, NULL none). When there is
 * none, or under strict placement, an error naming the same. Changes
 * nothing in s: the caller records *next where it keeps the node's
 * provider (a plan's own copy). */
minfer_status mf_place_fallback(minfer_session *s, int i, int failed, const minfer_node_desc *desc,
                                minfer_status st, const char *why, const minfer_run_options *ro,
                                int *next);

/* Type and shape inference of node n (shapes/shape_infer.h), asking the
 * loaded custom-operator plugins for an op no core rule covers. */
minfer_status mf_place_infer(const mf_node *n, const minfer_tensor_view *in, size_t n_in,
                             minfer_tensor_view *out, size_t n_out, char *err, size_t err_size);

/* The memory domain of provider prov: 0 (host) for a provider that
 * computes in host memory or for prov < 0, else 1 + prov. */
int mf_dom_of_prov(const minfer_session *s, int prov);

#endif
