/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server-side table printing: the columns and cells kube-apiserver returns
 * for `kubectl get` (Accept: as=Table). One printer per built-in kind,
 * dispatched by (group, kind) through a table; custom resources use the
 * CRD's additionalPrinterColumns (or Name, Age); every other kind gets the
 * default convertor's Name and Created At.
 *
 * The server always emits every column (priority-1 columns included);
 * kubectl hides priority > 0 unless -o wide. Cells are already formatted
 * strings ("1/1", "5m", "<none>") or integers, exactly as kube prints them.
 *
 * Threading: any thread (no global mutable state).
 */
#ifndef KB_PROXY_PRINTERS_H
#define KB_PROXY_PRINTERS_H

#include <jansson.h>
#include <time.h>

#include "proxy/model/resource.h"

/*
 * Column definitions for `r` (borrowed; NULL gives the default columns): a
 * NEW reference to an array of {"name","type","format","description",
 * "priority"}; the first column is always Name with format "name" (core
 * Events put Last Seen first and Name last, like kube).
 */
json_t *printers_columns(const struct proxy_resource *r);

/*
 * The cells of one row for `obj` (borrowed), in column order, as a NEW
 * reference to an array. `now` is the reference time for ages ("5m").
 * Never NULL unless out of memory.
 */
json_t *printers_cells(const struct proxy_resource *r, const json_t *obj, time_t now);

/* The Table of an autoscaling/v1 Scale (a built-in kind's /scale): Name,
 * Desired, Available, Age. New references. */
json_t *printers_scale_columns(void);
json_t *printers_scale_cells(const json_t *scale, time_t now);

#endif
