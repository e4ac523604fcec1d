/*
 * Placement: the session's providers and the provider of each node
 * (place/place.c). Included by plan/, exec/ and session/.
 *
 *     mf_place_open(s, opt);                 // s->provs, s->eval
 *     mf_place_node(s, i, &desc);            // s->assign[i], s->declined[i]
 *     mf_place_check_strict(s);
 *     // a prepare that failed on provider j:
 *     mf_place_fallback(s, i, j, &desc, st, why, &next);  // or an error
 */
#ifndef MINFER_CORE_PLACE_H
#define MINFER_CORE_PLACE_H

#include "place/state.h"

/* Opens the providers of the preference list (opt's, else MINFER_PROVIDERS,
 * else the default order) into s->provs, and the evaluator (s->eval) used
 * for constant folding. Uses s->api as the host table. */
minfer_status mf_place_open(minfer_session *s, const minfer_options *opt);

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
 * reason. When there is none, or under strict placement, an error naming
 * the same. Changes nothing in s: the caller records *next where it keeps
 * the node's provider (a plan's own copy). */
minfer_status mf_place_fallback(minfer_session *s, int i, int failed, const minfer_node_desc *desc,
                                minfer_status st, const char *why, int *next);

/* The memory domain of provider prov: 0 (host) for a provider that
 * computes in host memory or for prov < 0, else 1 + prov. */
int mf_dom_of_prov(const minfer_session *s, int prov);

#endif
