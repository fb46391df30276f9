/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes protobuf request bodies to JSON (see protobuf.h). A small
 * bounds-checked wire reader walks the bytes; the generated tables in
 * proxy/model/types.h name each field and give its type. Every decode step also
 * reports whether the value it produced is the wire's zero value, so the
 * caller can drop zeros of plain fields (gogo writes them) while keeping
 * them in maps and lists.
 */
#include "proxy/model/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"
#include "proxy/model/types.h"

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

struct rd {
	const uint8_t *p, *end;
};

struct dec {
	char *err;
	size_t errlen;
	int depth;
};

/* Pointer fields whose zero value is meaningful: gogo writes them only when
 * set, so a zero on the wire was sent on purpose (`--replicas=0`,
 * `kubectl create pdb --min-available=0`, a drain's --grace-period=0). */
static const struct {
	const char *msg, *field;
} keep_zero[] = {
    {"k8s.io.api.apps.v1.DeploymentSpec", "replicas"},
    {"k8s.io.api.apps.v1.StatefulSetSpec", "replicas"},
    {"k8s.io.api.apps.v1.ReplicaSetSpec", "replicas"},
    {"k8s.io.api.core.v1.ReplicationControllerSpec", "replicas"},
    {"k8s.io.api.apps.v1.DeploymentSpec", "revisionHistoryLimit"},
    {"k8s.io.api.apps.v1.DeploymentSpec", "progressDeadlineSeconds"},
    {"k8s.io.api.batch.v1.JobSpec", "parallelism"},
    {"k8s.io.api.batch.v1.JobSpec", "completions"},
    {"k8s.io.api.batch.v1.JobSpec", "backoffLimit"},
    {"k8s.io.api.batch.v1.JobSpec", "ttlSecondsAfterFinished"},
    {"k8s.io.api.batch.v1.JobSpec", "suspend"},
    {"k8s.io.api.batch.v1.CronJobSpec", "suspend"},
    {"k8s.io.api.batch.v1.CronJobSpec", "successfulJobsHistoryLimit"},
    {"k8s.io.api.batch.v1.CronJobSpec", "failedJobsHistoryLimit"},
    {"k8s.io.api.core.v1.PodSpec", "terminationGracePeriodSeconds"},
    {"k8s.io.api.core.v1.PodSpec", "automountServiceAccountToken"},
    {"k8s.io.api.core.v1.ServiceAccount", "automountServiceAccountToken"},
    {"k8s.io.api.core.v1.ConfigMap", "immutable"},
    {"k8s.io.api.core.v1.Secret", "immutable"},
    {"k8s.io.api.authentication.v1.TokenRequestSpec", "expirationSeconds"},
    {"k8s.io.api.policy.v1.PodDisruptionBudgetSpec", "minAvailable"},
    {"k8s.io.api.policy.v1.PodDisruptionBudgetSpec", "maxUnavailable"},
    {"k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions", "gracePeriodSeconds"},
};

static int dec_message(struct dec *d, const struct kt_message *m, struct rd *r, json_t **out,
		       bool *zero);
static int decode_k8s(struct dec *d, const void *body, size_t len, const char *msg_name,
		      json_t **out);

static int fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct dec *d, const char *fmt, ...)
{
	va_list ap;

	if (d->err && d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ---- wire reader ---- */

static int rd_varint(struct rd *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -EINVAL;
		uint8_t b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

static int rd_fixed(struct rd *r, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if ((size_t)(r->end - r->p) < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	*v = x;
	return 0;
}

static int rd_bytes(struct rd *r, struct rd *sub)
{
	uint64_t n;

	if (rd_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
		return -EINVAL;
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return 0;
}

static int rd_key(struct rd *r, uint32_t *num, int *wt)
{
	uint64_t k;

	if (rd_varint(r, &k) < 0 || (k >> 3) == 0 || (k >> 3) > 0x1fffffff)
		return -EINVAL;
	*num = (uint32_t)(k >> 3);
	*wt = (int)(k & 7);
	return 0;
}

static int rd_skip(struct rd *r, int wt)
{
	uint64_t v;
	struct rd sub;

	switch (wt) {
	case WT_VARINT: return rd_varint(r, &v);
	case WT_FIXED64: return rd_fixed(r, 8, &v);
	case WT_LEN: return rd_bytes(r, &sub);
	case WT_FIXED32: return rd_fixed(r, 4, &v);
	default: return -EINVAL; /* groups and reserved wire types */
	}
}

/* ---- scalars ---- */

static int wire_type_of(uint8_t kind)
{
	switch (kind) {
	case KT_STRING:
	case KT_BYTES:
	case KT_MESSAGE: return WT_LEN;
	case KT_DOUBLE: return WT_FIXED64;
	case KT_FLOAT: return WT_FIXED32;
	default: return WT_VARINT;
	}
}

static json_t *int_json(uint8_t kind, uint64_t v)
{
	switch (kind) {
	case KT_BOOL: return json_boolean(v != 0);
	case KT_INT32: return json_integer((int32_t)(uint32_t)v);
	case KT_UINT32: return json_integer((uint32_t)v);
	case KT_UINT64:
		if (v > (uint64_t)INT64_MAX)
			return json_real((double)v);
		return json_integer((json_int_t)v);
	default: /* KT_INT64 */ return json_integer((json_int_t)(int64_t)v);
	}
}

static int str_json(struct dec *d, const struct kt_field *f, struct rd *sub, json_t **out,
		    bool *zero)
{
	size_t n = (size_t)(sub->end - sub->p);

	if (f->kind == KT_BYTES) {
		char *b64 = kb_base64_encode(sub->p, n);
		if (!b64)
			return -ENOMEM;
		*out = json_string(b64);
		free(b64);
	} else {
		*out = json_stringn((const char *)sub->p, n);
		if (!*out)
			return fail(d, "field %s: invalid UTF-8 in string", f->json);
	}
	*zero = n == 0;
	return *out ? 0 : -ENOMEM;
}

static int float_json(const struct kt_field *f, uint64_t v, json_t **out, bool *zero)
{
	double x;

	if (f->kind == KT_FLOAT) {
		uint32_t u = (uint32_t)v;
		float fl;
		memcpy(&fl, &u, sizeof(fl));
		x = fl;
	} else {
		memcpy(&x, &v, sizeof(x));
	}
	*zero = x == 0;
	*out = json_real(x);
	return *out ? 0 : -ENOMEM;
}

/* Decodes one value of field f (not a packed run) whose key had wire type wt. */
static int dec_value(struct dec *d, const struct kt_field *f, struct rd *r, int wt, json_t **out,
		     bool *zero)
{
	struct rd sub;
	uint64_t v;

	if (wt != wire_type_of(f->kind))
		return fail(d, "field %s: wire type %d, expected %d", f->json, wt,
			    wire_type_of(f->kind));
	switch (f->kind) {
	case KT_STRING:
	case KT_BYTES:
		if (rd_bytes(r, &sub) < 0)
			return fail(d, "field %s: truncated", f->json);
		return str_json(d, f, &sub, out, zero);
	case KT_MESSAGE:
		if (rd_bytes(r, &sub) < 0)
			return fail(d, "field %s: truncated", f->json);
		return dec_message(d, f->msg, &sub, out, zero);
	case KT_DOUBLE:
	case KT_FLOAT:
		if (rd_fixed(r, f->kind == KT_DOUBLE ? 8 : 4, &v) < 0)
			return fail(d, "field %s: truncated", f->json);
		return float_json(f, v, out, zero);
	default:
		if (rd_varint(r, &v) < 0)
			return fail(d, "field %s: bad varint", f->json);
		*zero = v == 0 || (f->kind == KT_INT32 && (uint32_t)v == 0) ||
			(f->kind == KT_UINT32 && (uint32_t)v == 0);
		*out = int_json(f->kind, v);
		return *out ? 0 : -ENOMEM;
	}
}

/* The value a map entry has when its value field is absent. */
static int default_value(struct dec *d, const struct kt_field *f, json_t **out)
{
	struct rd empty = {NULL, NULL};
	bool zero;

	switch (f->kind) {
	case KT_MESSAGE: return dec_message(d, f->msg, &empty, out, &zero);
	case KT_STRING:
	case KT_BYTES: *out = json_string(""); break;
	case KT_BOOL: *out = json_false(); break;
	case KT_DOUBLE:
	case KT_FLOAT: *out = json_real(0); break;
	default: *out = json_integer(0);
	}
	return *out ? 0 : -ENOMEM;
}

/* ---- specials ---- */

static int fmt_time(struct dec *d, int64_t sec, int32_t nanos, bool micro, json_t **out)
{
	char buf[64];
	struct tm tm;
	time_t t = (time_t)sec;

	if (nanos < 0 || nanos > 999999999 || !gmtime_r(&t, &tm) || tm.tm_year < -1900 ||
	    tm.tm_year > 9999 - 1900)
		return fail(d, "time out of range");
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	if (micro)
		snprintf(buf + n, sizeof(buf) - n, ".%06dZ", nanos / 1000);
	else
		snprintf(buf + n, sizeof(buf) - n, "Z");
	*out = json_string(buf);
	return *out ? 0 : -ENOMEM;
}

/* Appends "<int>[.<frac without trailing zeros>]" of u / 10^digits. */
static size_t fmt_frac(char *buf, size_t len, uint64_t u, int digits)
{
	uint64_t scale = 1;
	char frac[24];

	for (int i = 0; i < digits; i++)
		scale *= 10;
	int n = snprintf(buf, len, "%" PRIu64, u / scale);
	uint64_t rem = u % scale;
	if (rem == 0 || digits == 0)
		return (size_t)n;
	snprintf(frac, sizeof(frac), "%0*" PRIu64, digits, rem);
	size_t fl = strlen(frac);
	while (fl > 0 && frac[fl - 1] == '0')
		frac[--fl] = '\0';
	return (size_t)n + (size_t)snprintf(buf + n, len - (size_t)n, ".%s", frac);
}

/* Go's time.Duration.String(): "1h2m3.5s", "1.5ms", "0s". */
static void go_duration(int64_t ns, char *buf, size_t len)
{
	uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	size_t n = 0;

	if (ns < 0)
		buf[n++] = '-';
	if (u == 0) {
		snprintf(buf, len, "0s");
	} else if (u < 1000) {
		snprintf(buf + n, len - n, "%" PRIu64 "ns", u);
	} else if (u < 1000000) {
		n += fmt_frac(buf + n, len - n, u, 3);
		snprintf(buf + n, len - n, "\xc2\xb5s");
	} else if (u < 1000000000) {
		n += fmt_frac(buf + n, len - n, u, 6);
		snprintf(buf + n, len - n, "ms");
	} else {
		uint64_t secs = u / 1000000000, h = secs / 3600, m = secs / 60 % 60;
		if (h)
			n += (size_t)snprintf(buf + n, len - n, "%" PRIu64 "h", h);
		if (h || m)
			n += (size_t)snprintf(buf + n, len - n, "%" PRIu64 "m", m);
		n += fmt_frac(buf + n, len - n, u % 60000000000ULL, 9);
		snprintf(buf + n, len - n, "s");
	}
}

/* The fields of a special message, read by number. */
struct special_vals {
	uint64_t v[4];  /* varints by field number 1..3 */
	struct rd s[4]; /* length-delimited by field number 1..3 */
	bool has_s[4];
};

static int read_special(struct dec *d, const struct kt_message *m, struct rd *r,
			struct special_vals *sv)
{
	uint32_t num;
	int wt;

	memset(sv, 0, sizeof(*sv));
	while (r->p < r->end) {
		if (rd_key(r, &num, &wt) < 0)
			return fail(d, "%s: bad key", m->name);
		const struct kt_field *f = kt_field_num(m, num);
		if (!f || num > 3) {
			if (rd_skip(r, wt) < 0)
				return fail(d, "%s: bad field %u", m->name, num);
			continue;
		}
		if (wt != wire_type_of(f->kind))
			return fail(d, "%s.%s: wrong wire type %d", m->name, f->name, wt);
		int rc = wt == WT_LEN ? rd_bytes(r, &sv->s[num]) : rd_varint(r, &sv->v[num]);
		if (rc < 0)
			return fail(d, "%s.%s: truncated", m->name, f->name);
		sv->has_s[num] = wt == WT_LEN;
	}
	return 0;
}

static int dec_raw_json(struct dec *d, const struct kt_message *m, struct rd *raw, json_t **out,
			bool *zero)
{
	size_t n = (size_t)(raw->end - raw->p);
	json_error_t jerr;

	*zero = n == 0;
	if (n == 0) {
		*out = json_null();
		return 0;
	}
	if (pb_is_k8s(raw->p, n)) {
		/* an embedded protobuf object (RawExtension of a typed object) */
		int rc = decode_k8s(d, raw->p, n, NULL, out);
		return rc == -ENOENT ? fail(d, "%s: unknown embedded kind", m->name) : rc;
	}
	*out = json_loadb((const char *)raw->p, n, JSON_DECODE_ANY, &jerr);
	if (!*out)
		return fail(d, "%s: invalid JSON: %s", m->name, jerr.text);
	return 0;
}

static int dec_special(struct dec *d, const struct kt_message *m, struct rd *r, json_t **out,
		       bool *zero)
{
	struct special_vals sv;
	char buf[64];
	int rc = read_special(d, m, r, &sv);

	if (rc < 0)
		return rc;
	switch (m->special) {
	case KT_TIME:
	case KT_MICROTIME:
		*zero = sv.v[1] == 0 && (uint32_t)sv.v[2] == 0;
		if (*zero) {
			*out = json_null();
			return 0;
		}
		return fmt_time(d, (int64_t)sv.v[1], (int32_t)(uint32_t)sv.v[2],
				m->special == KT_MICROTIME, out);
	case KT_DURATION:
		*zero = sv.v[1] == 0;
		go_duration((int64_t)sv.v[1], buf, sizeof(buf));
		*out = json_string(buf);
		break;
	case KT_QUANTITY:
		*zero = sv.s[1].p == sv.s[1].end;
		*out = json_stringn((const char *)sv.s[1].p, (size_t)(sv.s[1].end - sv.s[1].p));
		if (!*out)
			return fail(d, "%s: invalid UTF-8", m->name);
		break;
	case KT_INTORSTRING:
		if (sv.v[1] == 1) {
			*zero = sv.s[3].p == sv.s[3].end;
			*out = json_stringn((const char *)sv.s[3].p,
					    (size_t)(sv.s[3].end - sv.s[3].p));
			if (!*out)
				return fail(d, "%s: invalid UTF-8", m->name);
		} else {
			*zero = (int32_t)(uint32_t)sv.v[2] == 0;
			*out = json_integer((int32_t)(uint32_t)sv.v[2]);
		}
		break;
	default: /* RawExtension, FieldsV1, JSON: field 1 holds JSON bytes */
		return dec_raw_json(d, m, &sv.s[1], out, zero);
	}
	return *out ? 0 : -ENOMEM;
}

/* ---- messages ---- */

static bool keeps_zero(const struct kt_message *m, const struct kt_field *f)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(keep_zero); i++)
		if (strcmp(keep_zero[i].msg, m->name) == 0 &&
		    strcmp(keep_zero[i].field, f->json) == 0)
			return true;
	return false;
}

static int map_key(struct dec *d, const struct kt_field *f, struct rd *r, int wt, char *buf,
		   size_t len, json_t **skey)
{
	uint64_t v;

	if (f->key_kind == KT_STRING || f->key_kind == KT_BYTES) {
		struct rd sub;
		if (wt != WT_LEN || rd_bytes(r, &sub) < 0)
			return fail(d, "map %s: bad key", f->json);
		*skey = json_stringn((const char *)sub.p, (size_t)(sub.end - sub.p));
		return *skey ? 0 : fail(d, "map %s: invalid UTF-8 in key", f->json);
	}
	if (wt != WT_VARINT || rd_varint(r, &v) < 0)
		return fail(d, "map %s: bad key", f->json);
	json_t *k = int_json(f->key_kind, v);
	if (!k)
		return -ENOMEM;
	if (json_is_boolean(k))
		snprintf(buf, len, "%s", json_is_true(k) ? "true" : "false");
	else
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(k));
	json_decref(k);
	*skey = json_string(buf);
	return *skey ? 0 : -ENOMEM;
}

/* One map entry {1 key, 2 value} into the object `map`. */
static int dec_map_entry(struct dec *d, const struct kt_field *f, struct rd *e, json_t *map)
{
	json_t *key = NULL, *val = NULL;
	char buf[32];
	uint32_t num;
	int wt, rc = 0;
	bool zero;

	while (e->p < e->end && rc == 0) {
		if (rd_key(e, &num, &wt) < 0) {
			rc = fail(d, "map %s: bad entry", f->json);
		} else if (num == 1) {
			json_decref(key);
			key = NULL;
			rc = map_key(d, f, e, wt, buf, sizeof(buf), &key);
		} else if (num == 2) {
			json_decref(val);
			val = NULL;
			rc = dec_value(d, f, e, wt, &val, &zero);
		} else if (rd_skip(e, wt) < 0) {
			rc = fail(d, "map %s: bad entry", f->json);
		}
	}
	if (rc == 0 && !val)
		rc = default_value(d, f, &val);
	if (rc == 0)
		rc = json_object_setn_new(map, key ? json_string_value(key) : "",
					  key ? json_string_length(key) : 0, val) < 0
			 ? -ENOMEM
			 : 0;
	else
		json_decref(val);
	json_decref(key);
	return rc;
}

/* Returns obj[name] as a container of the given type, creating it. */
static json_t *container(json_t *obj, const char *name, bool array)
{
	json_t *c = json_object_get(obj, name);

	if (c && (array ? json_is_array(c) : json_is_object(c)))
		return c;
	c = array ? json_array() : json_object();
	if (!c || json_object_set_new(obj, name, c) < 0)
		return NULL;
	return c;
}

static bool packable(uint8_t kind)
{
	return kind != KT_STRING && kind != KT_BYTES && kind != KT_MESSAGE;
}

static int dec_repeated(struct dec *d, const struct kt_field *f, struct rd *r, int wt, json_t *arr)
{
	json_t *v;
	bool zero;
	int rc;

	if (wt == WT_LEN && packable(f->kind)) {
		struct rd run;
		if (rd_bytes(r, &run) < 0)
			return fail(d, "field %s: truncated", f->json);
		while (run.p < run.end) {
			rc = dec_value(d, f, &run, wire_type_of(f->kind), &v, &zero);
			if (rc < 0)
				return rc;
			if (json_array_append_new(arr, v) < 0)
				return -ENOMEM;
		}
		return 0;
	}
	rc = dec_value(d, f, r, wt, &v, &zero);
	if (rc < 0)
		return rc;
	return json_array_append_new(arr, v) < 0 ? -ENOMEM : 0;
}

static int dec_field(struct dec *d, const struct kt_message *m, const struct kt_field *f,
		     struct rd *r, int wt, json_t *obj)
{
	json_t *v, *c;
	bool zero;
	int rc;

	if (f->label == KT_MAP) {
		struct rd e;
		if (wt != WT_LEN || rd_bytes(r, &e) < 0)
			return fail(d, "map %s: bad entry", f->json);
		c = container(obj, f->json, false);
		return c ? dec_map_entry(d, f, &e, c) : -ENOMEM;
	}
	if (f->label == KT_REPEATED) {
		c = container(obj, f->json, true);
		return c ? dec_repeated(d, f, r, wt, c) : -ENOMEM;
	}
	rc = dec_value(d, f, r, wt, &v, &zero);
	if (rc < 0)
		return rc;
	if (f->json[0] == '\0') {
		/* an inline (embedded) struct: its fields join the parent's */
		rc = json_is_object(v) ? json_object_update(obj, v) : 0;
		json_decref(v);
		return rc < 0 ? -ENOMEM : 0;
	}
	if (zero && !keeps_zero(m, f)) {
		json_decref(v);
		json_object_del(obj, f->json);
		return 0;
	}
	return json_object_set_new(obj, f->json, v) < 0 ? -ENOMEM : 0;
}

static int dec_message(struct dec *d, const struct kt_message *m, struct rd *r, json_t **out,
		       bool *zero)
{
	uint32_t num;
	int wt, rc = 0;

	if (!m)
		return fail(d, "no message type");
	if (d->depth >= PB_MAX_DEPTH)
		return fail(d, "nesting deeper than %d", PB_MAX_DEPTH);
	d->depth++;
	if (m->special != KT_PLAIN) {
		rc = dec_special(d, m, r, out, zero);
		d->depth--;
		return rc;
	}
	json_t *obj = json_object();
	if (!obj)
		rc = -ENOMEM;
	while (rc == 0 && r->p < r->end) {
		if (rd_key(r, &num, &wt) < 0) {
			rc = fail(d, "%s: bad field key", m->name);
			break;
		}
		const struct kt_field *f = kt_field_num(m, num);
		if (f)
			rc = dec_field(d, m, f, r, wt, obj);
		else if (rd_skip(r, wt) < 0)
			rc = fail(d, "%s: bad unknown field %u", m->name, num);
	}
	d->depth--;
	if (rc < 0) {
		json_decref(obj);
		return rc;
	}
	*zero = json_object_size(obj) == 0;
	*out = obj;
	return 0;
}

/* ---- envelope ---- */

bool pb_is_k8s(const void *body, size_t len)
{
	return body && len >= 4 && memcmp(body, "k8s\0", 4) == 0;
}

struct envelope {
	struct rd api_version, kind, raw, encoding;
};

static int read_type_meta(struct dec *d, struct rd *r, struct envelope *env)
{
	uint32_t num;
	int wt;

	while (r->p < r->end) {
		if (rd_key(r, &num, &wt) < 0)
			return fail(d, "typeMeta: bad key");
		if ((num == 1 || num == 2) && wt == WT_LEN) {
			if (rd_bytes(r, num == 1 ? &env->api_version : &env->kind) < 0)
				return fail(d, "typeMeta: truncated");
		} else if (num == 1 || num == 2 || rd_skip(r, wt) < 0) {
			return fail(d, "typeMeta: bad field %u", num);
		}
	}
	return 0;
}

static int read_envelope(struct dec *d, struct rd *r, struct envelope *env)
{
	uint32_t num;
	int wt;
	struct rd tm;

	memset(env, 0, sizeof(*env));
	while (r->p < r->end) {
		if (rd_key(r, &num, &wt) < 0)
			return fail(d, "envelope: bad key");
		if (num >= 1 && num <= 3 && wt != WT_LEN)
			return fail(d, "envelope: field %u has wire type %d", num, wt);
		int rc = num == 1   ? rd_bytes(r, &tm)
			 : num == 2 ? rd_bytes(r, &env->raw)
			 : num == 3 ? rd_bytes(r, &env->encoding)
				    : rd_skip(r, wt);
		if (rc < 0)
			return fail(d, "envelope: truncated field %u", num);
		if (num == 1 && (rc = read_type_meta(d, &tm, env)) < 0)
			return rc;
	}
	return 0;
}

/* "apps/v1" + "Deployment" → "k8s.io.api.apps.v1.Deployment". */
static const struct kt_message *message_for(const struct envelope *env)
{
	char gv[128], name[512];
	size_t gl = (size_t)(env->api_version.end - env->api_version.p);
	size_t kl = (size_t)(env->kind.end - env->kind.p);

	if (gl == 0 || gl >= sizeof(gv) || kl == 0 || kl >= 100)
		return NULL;
	memcpy(gv, env->api_version.p, gl);
	gv[gl] = '\0';
	char *slash = strchr(gv, '/');
	const char *group = "core", *version = gv;
	if (slash) {
		*slash = '\0';
		version = slash + 1;
		group = gv;
		char *dot = strchr(gv, '.');
		if (strcmp(gv, "internal.apiserver.k8s.io") == 0)
			group = "apiserverinternal";
		else if (dot)
			*dot = '\0';
	}
	snprintf(name, sizeof(name), "k8s.io.api.%s.%s.%.*s", group, version, (int)kl,
		 (const char *)env->kind.p);
	return kt_find(name);
}

static int put_type_meta(json_t *obj, const struct envelope *env)
{
	const struct rd *v[2] = {&env->api_version, &env->kind};
	const char *names[2] = {"apiVersion", "kind"};

	for (int i = 0; i < 2; i++) {
		if (v[i]->p == v[i]->end)
			continue;
		json_t *s = json_stringn((const char *)v[i]->p, (size_t)(v[i]->end - v[i]->p));
		if (!s || json_object_set_new(obj, names[i], s) < 0)
			return -EINVAL;
	}
	return 0;
}

static int decode_k8s(struct dec *d, const void *body, size_t len, const char *msg_name,
		      json_t **out)
{
	struct envelope env;
	json_t *obj = NULL, *fields = NULL;
	bool zero;
	int rc;

	*out = NULL;
	if (!pb_is_k8s(body, len))
		return fail(d, "missing protobuf envelope magic");
	struct rd r = {(const uint8_t *)body + 4, (const uint8_t *)body + len};
	if ((rc = read_envelope(d, &r, &env)) < 0)
		return rc;
	if (env.encoding.p != env.encoding.end) {
		fail(d, "unsupported contentEncoding");
		return -ENOTSUP;
	}
	const struct kt_message *m = msg_name ? kt_find(msg_name) : message_for(&env);
	if (!m) {
		fail(d, "no protobuf message for %s", msg_name ? msg_name : "this kind");
		return -ENOENT;
	}
	if ((rc = dec_message(d, m, &env.raw, &fields, &zero)) < 0)
		return rc;
	obj = json_object();
	if (!obj || put_type_meta(obj, &env) < 0) {
		rc = fail(d, "invalid apiVersion or kind");
		goto out;
	}
	if (json_is_object(fields))
		json_object_update(obj, fields);
	*out = obj;
	obj = NULL;
out:
	json_decref(fields);
	json_decref(obj);
	return rc;
}

int pb_decode_k8s(const void *body, size_t len, const char *msg_name, json_t **out, char *err,
		  size_t errlen)
{
	struct dec d = {err, errlen, 0};

	return decode_k8s(&d, body, len, msg_name, out);
}

int pb_decode_message(const char *msg_name, const void *data, size_t len, json_t **out, char *err,
		      size_t errlen)
{
	struct dec d = {err, errlen, 0};
	const struct kt_message *m = kt_find(msg_name);
	struct rd r = {data, (const uint8_t *)data + len};
	bool zero;

	*out = NULL;
	if (!m) {
		fail(&d, "unknown message %s", msg_name ? msg_name : "(null)");
		return -ENOENT;
	}
	if (!data && len)
		return fail(&d, "no data");
	return dec_message(&d, m, &r, out, &zero);
}
