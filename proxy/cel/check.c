/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's type rules as cel-go's checker applies them in the environments
 * kube builds: the types of OpenAPI schemas (kube's SchemaDeclType),
 * assignability (dyn both ways), the join of aggregate literals' element
 * types, and the overload signatures of the operators, the standard
 * functions and kube's libraries, resolved with type parameters.
 *
 * DESIGN. A signature is written as text ("list(A).(A)->int": receiver,
 * arguments, result; single capital letters are type parameters) and read
 * into a small arena on the stack when a call is checked; only the result
 * type is copied into the program. A function without signatures here is
 * not checked (its result is dyn), so a library added later is permissive
 * until its signatures are.
 */
#include "proxy/cel/check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"

const struct cel_type cel_t_dyn = {.kind = CT_DYN}, cel_t_null = {.kind = CT_NULL},
		      cel_t_bool = {.kind = CT_BOOL}, cel_t_int = {.kind = CT_INT},
		      cel_t_uint = {.kind = CT_UINT}, cel_t_double = {.kind = CT_DOUBLE},
		      cel_t_string = {.kind = CT_STRING}, cel_t_bytes = {.kind = CT_BYTES},
		      cel_t_duration = {.kind = CT_DURATION},
		      cel_t_timestamp = {.kind = CT_TIMESTAMP};

const struct cel_type *cel_type_new(cel_program_t *p, enum cel_tk kind, const struct cel_type *a,
				    const struct cel_type *b)
{
	struct cel_type *t = cel_prog_alloc(p, sizeof(*t));
	t->kind = kind;
	t->p = a ? a : &cel_t_dyn;
	t->q = b ? b : &cel_t_dyn;
	return t;
}

bool cel_type_is_dyn(const struct cel_type *t)
{
	return !t || t->kind == CT_DYN;
}

/* ---- types of schemas ---- */

static bool flag(const json_t *s, const char *key)
{
	return json_is_true(json_object_get(s, key));
}

static const struct cel_type *string_type(const json_t *s)
{
	const char *f = json_string_value(json_object_get(s, "format"));
	if (f && !strcmp(f, "byte"))
		return &cel_t_bytes;
	if (f && !strcmp(f, "duration"))
		return &cel_t_duration;
	if (f && (!strcmp(f, "date") || !strcmp(f, "date-time")))
		return &cel_t_timestamp;
	return &cel_t_string;
}

static const struct cel_type *object_type(cel_program_t *p, const json_t *s)
{
	const json_t *addl = json_object_get(s, "additionalProperties");
	if (json_is_object(addl))
		return cel_type_new(p, CT_MAP, &cel_t_string, cel_type_of_schema(p, addl));
	if (flag(s, "x-kubernetes-preserve-unknown-fields") &&
	    !json_is_object(json_object_get(s, "properties")))
		return &cel_t_dyn;
	struct cel_type *t = (struct cel_type *)cel_type_new(p, CT_OBJECT, NULL, NULL);
	t->schema = s;
	return t;
}

const struct cel_type *cel_type_of_schema(cel_program_t *p, const json_t *s)
{
	/* a nullable value has its type (null compares with anything) */
	if (!s || flag(s, "x-kubernetes-int-or-string"))
		return &cel_t_dyn;
	const char *t = json_string_value(json_object_get(s, "type"));
	if (!t)
		return flag(s, "x-kubernetes-embedded-resource") ? object_type(p, s) : &cel_t_dyn;
	if (!strcmp(t, "integer"))
		return &cel_t_int;
	if (!strcmp(t, "number"))
		return &cel_t_double;
	if (!strcmp(t, "boolean"))
		return &cel_t_bool;
	if (!strcmp(t, "string"))
		return string_type(s);
	if (!strcmp(t, "array"))
		return cel_type_new(p, CT_LIST, cel_type_of_schema(p, json_object_get(s, "items")),
				    NULL);
	if (!strcmp(t, "object"))
		return object_type(p, s);
	return &cel_t_dyn;
}

/* ---- names ---- */

void cel_type_name_of(const struct cel_type *t, char *buf, size_t cap)
{
	static const char *const names[] = {
	    [CT_DYN] = "dyn",
	    [CT_NULL] = "null_type",
	    [CT_BOOL] = "bool",
	    [CT_INT] = "int",
	    [CT_UINT] = "uint",
	    [CT_DOUBLE] = "double",
	    [CT_STRING] = "string",
	    [CT_BYTES] = "bytes",
	    [CT_DURATION] = "google.protobuf.Duration",
	    [CT_TIMESTAMP] = "google.protobuf.Timestamp",
	    [CT_OBJECT] = "object",
	};
	char a[256], b[256];
	if (!t)
		t = &cel_t_dyn;
	switch (t->kind) {
	case CT_LIST:
		cel_type_name_of(t->p, a, sizeof(a));
		snprintf(buf, cap, "list(%s)", a);
		return;
	case CT_MAP:
		cel_type_name_of(t->p, a, sizeof(a));
		cel_type_name_of(t->q, b, sizeof(b));
		snprintf(buf, cap, "map(%s, %s)", a, b);
		return;
	case CT_TYPE:
		cel_type_name_of(t->p, a, sizeof(a));
		snprintf(buf, cap, "type(%s)", a);
		return;
	case CT_OPT:
		cel_type_name_of(t->p, a, sizeof(a));
		snprintf(buf, cap, "optional_type(%s)", a);
		return;
	case CT_OPAQUE:
	case CT_PARAM: snprintf(buf, cap, "%s", t->name); return;
	default: snprintf(buf, cap, "%s", names[t->kind]); return;
	}
}

/* ---- assignability ---- */

/* Type parameters bound while a signature is matched. */
struct subst {
	const struct cel_type *v[26];
};

static bool same_object(const struct cel_type *a, const struct cel_type *b)
{
	return a->schema == b->schema || json_equal((json_t *)a->schema, (json_t *)b->schema);
}

static bool exact(const struct cel_type *a, const struct cel_type *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case CT_LIST:
	case CT_TYPE:
	case CT_OPT: return exact(a->p, b->p);
	case CT_MAP: return exact(a->p, b->p) && exact(a->q, b->q);
	case CT_OBJECT: return same_object(a, b);
	case CT_OPAQUE:
	case CT_PARAM: return !strcmp(a->name, b->name);
	default: return true;
	}
}

static bool unify(struct subst *s, const struct cel_type *want, const struct cel_type *actual);

/* A schema's object and a map literal with string keys: kube names object
 * types per CRD write (selfType<n>), so no literal can be of one; here a
 * map literal stands for one (a deviation on the permissive side). */
static bool object_and_map(const struct cel_type *o, const struct cel_type *m)
{
	return o->kind == CT_OBJECT && m->kind == CT_MAP &&
	       (m->p->kind == CT_STRING || m->p->kind == CT_DYN);
}

static bool bind(struct subst *s, const struct cel_type *param, const struct cel_type *actual)
{
	int i = param->name[0] - 'A';
	const struct cel_type *bound = s->v[i];
	if (!bound || bound->kind == CT_NULL) {
		s->v[i] = actual;
		return true;
	}
	/* null joins any type (`cond ? 'text' : null` is a string), as kube's
	 * documented audit annotations rely on */
	if (actual->kind == CT_NULL)
		return true;
	if (!unify(s, bound, actual))
		return false;
	if (cel_type_is_dyn(actual))
		s->v[i] = actual; /* the most general */
	return true;
}

static bool unify(struct subst *s, const struct cel_type *want, const struct cel_type *actual)
{
	if (want->kind == CT_PARAM)
		return bind(s, want, actual);
	if (want->kind == CT_DYN || actual->kind == CT_DYN)
		return true;
	if (want->kind != actual->kind)
		return (actual->kind == CT_NULL &&
			(want->kind == CT_OBJECT || want->kind == CT_OPAQUE)) ||
		       object_and_map(want, actual) || object_and_map(actual, want);
	switch (want->kind) {
	case CT_LIST:
	case CT_TYPE:
	case CT_OPT: return unify(s, want->p, actual->p);
	case CT_MAP: return unify(s, want->p, actual->p) && unify(s, want->q, actual->q);
	case CT_OBJECT: return same_object(want, actual);
	case CT_OPAQUE: return !strcmp(want->name, actual->name);
	default: return true;
	}
}

bool cel_type_assignable(const struct cel_type *want, const struct cel_type *actual)
{
	struct subst s = {0};
	return unify(&s, want ? want : &cel_t_dyn, actual ? actual : &cel_t_dyn);
}

/* Whether t holds dyn anywhere (list(dyn) is more general than list(int)). */
static bool has_dyn(const struct cel_type *t)
{
	switch (t->kind) {
	case CT_DYN: return true;
	case CT_LIST:
	case CT_TYPE:
	case CT_OPT: return has_dyn(t->p);
	case CT_MAP: return has_dyn(t->p) || has_dyn(t->q);
	default: return false;
	}
}

const struct cel_type *cel_type_join(const struct cel_type *a, const struct cel_type *b)
{
	if (!cel_type_assignable(a, b))
		return NULL;
	return has_dyn(b) && !has_dyn(a) ? b : a;
}

/* ---- signatures ---- */

struct sig {
	const char *name;
	bool receiver;
	const char *text; /* "recv.(args)->result" or "(args)->result" */
};

#define CMP(op)                                                                                 \
	{op, 0, "(bool,bool)->bool"}, {op, 0, "(int,int)->bool"}, {op, 0, "(uint,uint)->bool"}, \
	    {op, 0, "(double,double)->bool"}, {op, 0, "(string,string)->bool"},                 \
	    {op, 0, "(bytes,bytes)->bool"}, {op, 0, "(timestamp,timestamp)->bool"},             \
	    {op, 0, "(duration,duration)->bool"}, {op, 0, "(int,uint)->bool"},                  \
	    {op, 0, "(int,double)->bool"}, {op, 0, "(uint,int)->bool"},                         \
	    {op, 0, "(uint,double)->bool"}, {op, 0, "(double,int)->bool"},                      \
	{                                                                                       \
		op, 0, "(double,uint)->bool"                                                    \
	}
#define NUM(op)                                                  \
	{op, 0, "(int,int)->int"}, {op, 0, "(uint,uint)->uint"}, \
	{                                                        \
		op, 0, "(double,double)->double"                 \
	}
#define TS_GETTER(fn)                                                     \
	{fn, 1, "timestamp.()->int"}, {fn, 1, "timestamp.(string)->int"}, \
	{                                                                 \
		fn, 1, "duration.()->int"                                 \
	}
#define Q  "kubernetes.Quantity"
#define SV "kubernetes.Semver"
#define IP "net.IP"
#define CI "net.CIDR"
#define AZ "kubernetes.authorization."

static const struct sig sigs[] = {
    /* operators */
    {"_+_", 0, "(int,int)->int"},
    {"_+_", 0, "(uint,uint)->uint"},
    {"_+_", 0, "(double,double)->double"},
    {"_+_", 0, "(string,string)->string"},
    {"_+_", 0, "(bytes,bytes)->bytes"},
    {"_+_", 0, "(list(A),list(A))->list(A)"},
    {"_+_", 0, "(duration,duration)->duration"},
    {"_+_", 0, "(timestamp,duration)->timestamp"},
    {"_+_", 0, "(duration,timestamp)->timestamp"},
    {"_-_", 0, "(int,int)->int"},
    {"_-_", 0, "(uint,uint)->uint"},
    {"_-_", 0, "(double,double)->double"},
    {"_-_", 0, "(duration,duration)->duration"},
    {"_-_", 0, "(timestamp,timestamp)->duration"},
    {"_-_", 0, "(timestamp,duration)->timestamp"},
    NUM("_*_"),
    NUM("_/_"),
    {"_%_", 0, "(int,int)->int"},
    {"_%_", 0, "(uint,uint)->uint"},
    CMP("_<_"),
    CMP("_<=_"),
    CMP("_>_"),
    CMP("_>=_"),
    {"_==_", 0, "(A,A)->bool"},
    {"_!=_", 0, "(A,A)->bool"},
    {"@in", 0, "(A,list(A))->bool"},
    {"@in", 0, "(A,map(A,B))->bool"},
    {"_[_]", 0, "(list(A),int)->A"},
    {"_[_]", 0, "(list(A),uint)->A"},
    {"_[_]", 0, "(map(A,B),A)->B"},
    {"!_", 0, "(bool)->bool"},
    {"-_", 0, "(int)->int"},
    {"-_", 0, "(double)->double"},
    {"-_", 0, "(duration)->duration"},
    {"_&&_", 0, "(bool,bool)->bool"},
    {"_||_", 0, "(bool,bool)->bool"},
    {"_?_:_", 0, "(bool,A,A)->A"},
    {"@not_strictly_false", 0, "(bool)->bool"},
    /* standard functions */
    {"size", 0, "(string)->int"},
    {"size", 0, "(bytes)->int"},
    {"size", 0, "(list(A))->int"},
    {"size", 0, "(map(A,B))->int"},
    {"size", 1, "string.()->int"},
    {"size", 1, "bytes.()->int"},
    {"size", 1, "list(A).()->int"},
    {"size", 1, "map(A,B).()->int"},
    {"contains", 1, "string.(string)->bool"},
    {"startsWith", 1, "string.(string)->bool"},
    {"endsWith", 1, "string.(string)->bool"},
    {"matches", 1, "string.(string)->bool"},
    {"matches", 0, "(string,string)->bool"},
    {"int", 0, "(int)->int"},
    {"int", 0, "(uint)->int"},
    {"int", 0, "(double)->int"},
    {"int", 0, "(string)->int"},
    {"int", 0, "(timestamp)->int"},
    {"int", 0, "(duration)->int"},
    {"uint", 0, "(uint)->uint"},
    {"uint", 0, "(int)->uint"},
    {"uint", 0, "(double)->uint"},
    {"uint", 0, "(string)->uint"},
    {"double", 0, "(double)->double"},
    {"double", 0, "(int)->double"},
    {"double", 0, "(uint)->double"},
    {"double", 0, "(string)->double"},
    {"string", 0, "(string)->string"},
    {"string", 0, "(int)->string"},
    {"string", 0, "(uint)->string"},
    {"string", 0, "(double)->string"},
    {"string", 0, "(bool)->string"},
    {"string", 0, "(bytes)->string"},
    {"string", 0, "(timestamp)->string"},
    {"string", 0, "(duration)->string"},
    {"string", 0, "(type(A))->string"},
    {"string", 0, "(" IP ")->string"},
    {"string", 0, "(" CI ")->string"},
    {"bytes", 0, "(bytes)->bytes"},
    {"bytes", 0, "(string)->bytes"},
    {"bool", 0, "(bool)->bool"},
    {"bool", 0, "(string)->bool"},
    {"duration", 0, "(duration)->duration"},
    {"duration", 0, "(string)->duration"},
    {"timestamp", 0, "(timestamp)->timestamp"},
    {"timestamp", 0, "(string)->timestamp"},
    {"timestamp", 0, "(int)->timestamp"},
    {"type", 0, "(A)->type(A)"},
    {"dyn", 0, "(A)->dyn"},
    TS_GETTER("getHours"),
    TS_GETTER("getMinutes"),
    TS_GETTER("getSeconds"),
    TS_GETTER("getMilliseconds"),
    {"getFullYear", 1, "timestamp.()->int"},
    {"getFullYear", 1, "timestamp.(string)->int"},
    {"getMonth", 1, "timestamp.()->int"},
    {"getMonth", 1, "timestamp.(string)->int"},
    {"getDate", 1, "timestamp.()->int"},
    {"getDate", 1, "timestamp.(string)->int"},
    {"getDayOfMonth", 1, "timestamp.()->int"},
    {"getDayOfMonth", 1, "timestamp.(string)->int"},
    {"getDayOfWeek", 1, "timestamp.()->int"},
    {"getDayOfWeek", 1, "timestamp.(string)->int"},
    {"getDayOfYear", 1, "timestamp.()->int"},
    {"getDayOfYear", 1, "timestamp.(string)->int"},
    /* cel-go ext strings */
    {"charAt", 1, "string.(int)->string"},
    {"indexOf", 1, "string.(string)->int"},
    {"indexOf", 1, "string.(string,int)->int"},
    {"lastIndexOf", 1, "string.(string)->int"},
    {"lastIndexOf", 1, "string.(string,int)->int"},
    {"lowerAscii", 1, "string.()->string"},
    {"upperAscii", 1, "string.()->string"},
    {"trim", 1, "string.()->string"},
    {"replace", 1, "string.(string,string)->string"},
    {"replace", 1, "string.(string,string,int)->string"},
    {"split", 1, "string.(string)->list(string)"},
    {"split", 1, "string.(string,int)->list(string)"},
    {"substring", 1, "string.(int)->string"},
    {"substring", 1, "string.(int,int)->string"},
    {"join", 1, "list(string).()->string"},
    {"join", 1, "list(string).(string)->string"},
    {"strings.quote", 0, "(string)->string"},
    {"format", 1, "string.(list(dyn))->string"},
    /* kube lists and regex */
    {"isSorted", 1, "list(A).()->bool"},
    {"sum", 1, "list(A).()->A"},
    {"min", 1, "list(A).()->A"},
    {"max", 1, "list(A).()->A"},
    {"indexOf", 1, "list(A).(A)->int"},
    {"lastIndexOf", 1, "list(A).(A)->int"},
    {"find", 1, "string.(string)->string"},
    {"findAll", 1, "string.(string)->list(string)"},
    {"findAll", 1, "string.(string,int)->list(string)"},
    /* cel-go ext sets, encoders, optional types */
    {"sets.contains", 0, "(list(A),list(A))->bool"},
    {"sets.equivalent", 0, "(list(A),list(A))->bool"},
    {"sets.intersects", 0, "(list(A),list(A))->bool"},
    {"base64.encode", 0, "(bytes)->string"},
    {"base64.decode", 0, "(string)->bytes"},
    {"optional.of", 0, "(A)->optional_type(A)"},
    {"optional.ofNonZeroValue", 0, "(A)->optional_type(A)"},
    {"optional.none", 0, "()->optional_type(A)"},
    {"hasValue", 1, "optional_type(A).()->bool"},
    {"value", 1, "optional_type(A).()->A"},
    {"or", 1, "optional_type(A).(optional_type(A))->optional_type(A)"},
    {"orValue", 1, "optional_type(A).(A)->A"},
    {"first", 1, "list(A).()->optional_type(A)"},
    {"last", 1, "list(A).()->optional_type(A)"},
    {"optional.unwrap", 0, "(list(optional_type(A)))->list(A)"},
    {"unwrapOpt", 1, "list(optional_type(A)).()->list(A)"},
    /* kube quantity and semver */
    {"quantity", 0, "(string)->" Q},
    {"isQuantity", 0, "(string)->bool"},
    {"sign", 0, "(" Q ")->int"},
    {"isInteger", 1, Q ".()->bool"},
    {"asInteger", 1, Q ".()->int"},
    {"asApproximateFloat", 1, Q ".()->double"},
    {"add", 1, Q ".(" Q ")->" Q},
    {"add", 1, Q ".(int)->" Q},
    {"sub", 1, Q ".(" Q ")->" Q},
    {"sub", 1, Q ".(int)->" Q},
    {"isGreaterThan", 1, Q ".(" Q ")->bool"},
    {"isLessThan", 1, Q ".(" Q ")->bool"},
    {"compareTo", 1, Q ".(" Q ")->int"},
    {"isGreaterThan", 1, SV ".(" SV ")->bool"},
    {"isLessThan", 1, SV ".(" SV ")->bool"},
    {"compareTo", 1, SV ".(" SV ")->int"},
    {"semver", 0, "(string)->" SV},
    {"semver", 0, "(string,bool)->" SV},
    {"isSemver", 0, "(string)->bool"},
    {"isSemver", 0, "(string,bool)->bool"},
    {"major", 1, SV ".()->int"},
    {"minor", 1, SV ".()->int"},
    {"patch", 1, SV ".()->int"},
    /* kube URLs, IPs and CIDRs */
    {"url", 0, "(string)->kubernetes.URL"},
    {"isURL", 0, "(string)->bool"},
    {"getScheme", 1, "kubernetes.URL.()->string"},
    {"getHost", 1, "kubernetes.URL.()->string"},
    {"getHostname", 1, "kubernetes.URL.()->string"},
    {"getPort", 1, "kubernetes.URL.()->string"},
    {"getEscapedPath", 1, "kubernetes.URL.()->string"},
    {"getQuery", 1, "kubernetes.URL.()->map(string,list(string))"},
    {"ip", 0, "(string)->" IP},
    {"isIP", 0, "(string)->bool"},
    {"ip.isCanonical", 0, "(string)->bool"},
    {"family", 1, IP ".()->int"},
    {"isUnspecified", 1, IP ".()->bool"},
    {"isLoopback", 1, IP ".()->bool"},
    {"isLinkLocalMulticast", 1, IP ".()->bool"},
    {"isLinkLocalUnicast", 1, IP ".()->bool"},
    {"isGlobalUnicast", 1, IP ".()->bool"},
    {"cidr", 0, "(string)->" CI},
    {"isCIDR", 0, "(string)->bool"},
    {"containsIP", 1, CI ".(" IP ")->bool"},
    {"containsIP", 1, CI ".(string)->bool"},
    {"containsCIDR", 1, CI ".(" CI ")->bool"},
    {"containsCIDR", 1, CI ".(string)->bool"},
    {"ip", 1, CI ".()->" IP},
    {"masked", 1, CI ".()->" CI},
    {"prefixLength", 1, CI ".()->int"},
    /* kube format */
    {"format.named", 0, "(string)->optional_type(kubernetes.NamedFormat)"},
    {"validate", 1, "kubernetes.NamedFormat.(string)->optional_type(list(string))"},
    {"format.dns1123Label", 0, "()->kubernetes.NamedFormat"},
    {"format.dns1123Subdomain", 0, "()->kubernetes.NamedFormat"},
    {"format.dns1035Label", 0, "()->kubernetes.NamedFormat"},
    {"format.qualifiedName", 0, "()->kubernetes.NamedFormat"},
    {"format.dns1123LabelPrefix", 0, "()->kubernetes.NamedFormat"},
    {"format.dns1123SubdomainPrefix", 0, "()->kubernetes.NamedFormat"},
    {"format.dns1035LabelPrefix", 0, "()->kubernetes.NamedFormat"},
    {"format.labelValue", 0, "()->kubernetes.NamedFormat"},
    {"format.uri", 0, "()->kubernetes.NamedFormat"},
    {"format.uuid", 0, "()->kubernetes.NamedFormat"},
    {"format.byte", 0, "()->kubernetes.NamedFormat"},
    {"format.date", 0, "()->kubernetes.NamedFormat"},
    {"format.datetime", 0, "()->kubernetes.NamedFormat"},
    /* kube authorizer */
    {"path", 1, AZ "Authorizer.(string)->" AZ "PathCheck"},
    {"group", 1, AZ "Authorizer.(string)->" AZ "GroupCheck"},
    {"serviceAccount", 1, AZ "Authorizer.(string,string)->" AZ "Authorizer"},
    {"resource", 1, AZ "GroupCheck.(string)->" AZ "ResourceCheck"},
    {"subresource", 1, AZ "ResourceCheck.(string)->" AZ "ResourceCheck"},
    {"namespace", 1, AZ "ResourceCheck.(string)->" AZ "ResourceCheck"},
    {"name", 1, AZ "ResourceCheck.(string)->" AZ "ResourceCheck"},
    {"check", 1, AZ "PathCheck.(string)->" AZ "Decision"},
    {"check", 1, AZ "ResourceCheck.(string)->" AZ "Decision"},
    {"allowed", 1, AZ "Decision.()->bool"},
    {"errored", 1, AZ "Decision.()->bool"},
    {"reason", 1, AZ "Decision.()->string"},
    {"error", 1, AZ "Decision.()->string"},
};

/* A signature read into the stack: types and their names. */
struct sig_arena {
	struct cel_type t[48];
	size_t nt;
	char names[256];
	size_t nn;
};

static const struct cel_type *prim(const char *w, size_t n)
{
	static const struct {
		const char *name;
		const struct cel_type *t;
	} ps[] = {
	    {"int", &cel_t_int},           {"uint", &cel_t_uint},
	    {"double", &cel_t_double},     {"bool", &cel_t_bool},
	    {"string", &cel_t_string},     {"bytes", &cel_t_bytes},
	    {"null_type", &cel_t_null},    {"dyn", &cel_t_dyn},
	    {"duration", &cel_t_duration}, {"timestamp", &cel_t_timestamp},
	};
	for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
		if (strlen(ps[k].name) == n && !memcmp(ps[k].name, w, n))
			return ps[k].t;
	return NULL;
}

static struct cel_type *sig_new(struct sig_arena *a, enum cel_tk kind)
{
	KB_REQUIRE(a->nt < sizeof(a->t) / sizeof(a->t[0]));
	struct cel_type *t = &a->t[a->nt++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	return t;
}

/* One type at *s; a dotted name followed by ".(" is a receiver: stops before. */
static const struct cel_type *sig_type(struct sig_arena *a, const char **s)
{
	const char *w = *s;
	size_t n = 0;
	while (w[n] && (w[n] == '_' || w[n] == '.' || (w[n] >= 'a' && w[n] <= 'z') ||
			(w[n] >= 'A' && w[n] <= 'Z')))
		n++;
	if (n && w[n - 1] == '.' && w[n] == '(')
		n--; /* "kubernetes.URL.()" */
	*s = w + n;
	const struct cel_type *t = prim(w, n);
	if (t)
		return t;
	static const struct {
		const char *name;
		enum cel_tk kind;
	} comps[] = {
	    {"list", CT_LIST}, {"map", CT_MAP}, {"optional_type", CT_OPT}, {"type", CT_TYPE}};
	for (size_t k = 0; k < sizeof(comps) / sizeof(comps[0]); k++) {
		if (strlen(comps[k].name) != n || memcmp(comps[k].name, w, n) || **s != '(')
			continue;
		struct cel_type *c = sig_new(a, comps[k].kind);
		(*s)++;
		c->p = sig_type(a, s);
		c->q = &cel_t_dyn;
		if (**s == ',') {
			(*s)++;
			c->q = sig_type(a, s);
		}
		(*s)++; /* ')' */
		return c;
	}
	struct cel_type *o =
	    sig_new(a, n == 1 && w[0] >= 'A' && w[0] <= 'Z' ? CT_PARAM : CT_OPAQUE);
	KB_REQUIRE(a->nn + n + 1 <= sizeof(a->names));
	memcpy(a->names + a->nn, w, n);
	a->names[a->nn + n] = '\0';
	o->name = a->names + a->nn;
	a->nn += n + 1;
	return o;
}

/* Reads sig into params (receiver first) and *result: the parameter count. */
static size_t sig_read(struct sig_arena *a, const char *s, const struct cel_type **params,
		       size_t cap, const struct cel_type **result)
{
	size_t n = 0;
	if (*s != '(') {
		params[n++] = sig_type(a, &s);
		s++; /* '.' */
	}
	s++; /* '(' */
	while (*s != ')' && n < cap) {
		params[n++] = sig_type(a, &s);
		if (*s == ',')
			s++;
	}
	s += 3; /* ")->" */
	*result = sig_type(a, &s);
	return n;
}

/* t with the bound parameters substituted (unbound: dyn), in p's memory
 * when it is composite. */
static const struct cel_type *subst(cel_program_t *p, const struct subst *s,
				    const struct cel_type *t)
{
	switch (t->kind) {
	case CT_PARAM: {
		const struct cel_type *b = s->v[t->name[0] - 'A'];
		return b ? b : &cel_t_dyn;
	}
	case CT_LIST:
	case CT_TYPE:
	case CT_OPT:
	case CT_MAP: return cel_type_new(p, t->kind, subst(p, s, t->p), subst(p, s, t->q));
	case CT_OPAQUE: {
		size_t n = strlen(t->name);
		struct cel_type *o = (struct cel_type *)cel_type_new(p, CT_OPAQUE, NULL, NULL);
		char *name = cel_prog_alloc(p, n + 1);
		memcpy(name, t->name, n + 1);
		o->name = name;
		return o;
	}
	default: return t;
	}
}

int cel_check_overload(cel_program_t *p, const char *name, bool receiver,
		       const struct cel_type *const *args, size_t nargs,
		       const struct cel_type **out)
{
	const struct cel_type *result = NULL;
	bool known = false;
	*out = &cel_t_dyn;
	for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
		if (sigs[k].receiver != receiver || strcmp(sigs[k].name, name))
			continue;
		known = true;
		struct sig_arena a;
		a.nt = a.nn = 0;
		const struct cel_type *params[8], *res;
		size_t n = sig_read(&a, sigs[k].text, params, 8, &res);
		if (n != nargs)
			continue;
		struct subst s = {0};
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++)
			ok = unify(&s, params[i], args[i] ? args[i] : &cel_t_dyn);
		if (!ok)
			continue;
		const struct cel_type *r = subst(p, &s, res);
		if (!result)
			result = r;
		else if (!cel_type_is_dyn(result) && !exact(result, r))
			result = &cel_t_dyn;
	}
	if (!known)
		return 0;
	if (!result)
		return -ENOENT;
	*out = result;
	return 1;
}
