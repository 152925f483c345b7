/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow-sticky load-balancer tables. Pure code (no EAL): unit-tested.
 */
#ifndef SL_LB_H
#define SL_LB_H

#include "sl_shared.h"

/*
 * Rebuilds svc->bucket[] for the instances in svc->live[0..n_live) with
 * minimal movement: buckets of instances that left are handed out, and
 * instances above their fair share (SL_LB_BUCKETS / n, the first
 * SL_LB_BUCKETS % n instances one more) give buckets to those below it;
 * every other bucket keeps its instance. Each entry is stored atomically,
 * so readers never see a torn value. Called by the single writer only.
 */
void sl_lb_rebuild(struct sl_service *svc);

#endif /* SL_LB_H */
