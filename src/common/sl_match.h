/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wildcard matches: public, so that an NF built out of the tree has them
 * too (include/sluice/match.h, installed with libsluice).
 */
#ifndef SL_MATCH_H
#define SL_MATCH_H

#include "sluice/match.h"

#endif /* SL_MATCH_H */
