/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rte_acl classifier over wildcard matches: public, so that an NF
 * built out of the tree has it too (include/sluice/classifier.h,
 * installed with libsluice).
 */
#ifndef SL_CLASSIFIER_H
#define SL_CLASSIFIER_H

#include "sluice/classifier.h"

#endif /* SL_CLASSIFIER_H */
