/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle usage`: GPU-hours, cost, share of capacity and idle from the
 * tenants' allocation ledgers (docs/finops.md). Blocking file I/O;
 * command line only.
 */
#ifndef KB_CMD_USAGE_H
#define KB_CMD_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The process exit status: 0, 1 (failed), 2 (usage). */
int cmd_usage(int argc, char **argv);
/* GPU-hours held by the pods of the tenant whose store is `db` between
 * since and until (Unix seconds); 0 when it has no ledger. 0 or a negative
 * errno. */
int usage_gpu_hours(const char *db, int64_t since, int64_t until, double *out);
/* $KUBICLE_HOME/prices.yaml (the platform's price file, used when none is
 * named) in buf; NULL when `present` and it does not exist. */
const char *usage_default_prices(char *buf, size_t len, bool present);
/* The first second of the current month (UTC). */
int64_t usage_month_start(int64_t now);

#endif
