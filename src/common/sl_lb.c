/* SPDX-License-Identifier: BSD-3-Clause */
#include "sl_lb.h"

void
sl_lb_rebuild(struct sl_service *svc)
{
	uint16_t n = svc->n_live;
	uint16_t quota[SL_LB_BUCKETS], have[SL_LB_BUCKETS];
	int pos_of_bucket[SL_LB_BUCKETS];

	if (n == 0)
		return;
	if (n > SL_LB_BUCKETS)
		n = SL_LB_BUCKETS; /* more instances than buckets */
	for (uint16_t k = 0; k < n; k++) {
		quota[k] = (uint16_t)(SL_LB_BUCKETS / n +
				      (k < SL_LB_BUCKETS % n ? 1 : 0));
		have[k] = 0;
	}
	/* Which live position owns each bucket (-1: to be handed out). */
	for (int b = 0; b < SL_LB_BUCKETS; b++) {
		pos_of_bucket[b] = -1;
		for (uint16_t k = 0; k < n; k++)
			if (svc->bucket[b] == svc->live[k]) {
				pos_of_bucket[b] = k;
				break;
			}
		if (pos_of_bucket[b] >= 0) {
			uint16_t k = (uint16_t)pos_of_bucket[b];

			if (have[k] < quota[k])
				have[k]++;
			else
				pos_of_bucket[b] = -1; /* over its share */
		}
	}
	for (int b = 0, k = 0; b < SL_LB_BUCKETS; b++) {
		if (pos_of_bucket[b] >= 0)
			continue;
		while (have[k] >= quota[k])
			k++;
		have[k]++;
		__atomic_store_n(&svc->bucket[b], svc->live[k],
				 __ATOMIC_RELAXED);
	}
}
