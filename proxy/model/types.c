/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Look-ups over the generated message tables (proxy/model/types_gen.c, written by
 * scripts/gen_types.py). Messages are sorted by name, so kt_find is a binary
 * search; a message has at most a few dozen fields, so field look-ups are
 * linear scans.
 */
#include "proxy/model/types.h"

#include <string.h>

const struct kt_message *kt_find(const char *name)
{
	size_t lo = 0, hi = kt_gen_nmessages;

	if (!name)
		return NULL;
	if (name[0] == '.')
		name++;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, kt_gen_messages[mid].name);

		if (c == 0)
			return &kt_gen_messages[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static const struct kt_field *field_in(const struct kt_message *m, const char *json, int depth)
{
	/* the first byte before strcmp: every walk of an object asks for each
	 * of its keys here, among a message's 20-40 fields */
	for (uint16_t i = 0; i < m->nfields; i++)
		if (m->fields[i].json[0] == json[0] && strcmp(m->fields[i].json, json) == 0)
			return &m->fields[i];
	/* then through inline (embedded) fields, which have an empty JSON name */
	for (uint16_t i = 0; depth < 4 && i < m->nfields; i++) {
		const struct kt_field *f = &m->fields[i];
		if (f->json[0] == '\0' && f->msg) {
			const struct kt_field *in = field_in(f->msg, json, depth + 1);
			if (in)
				return in;
		}
	}
	return NULL;
}

const struct kt_field *kt_field(const struct kt_message *m, const char *json)
{
	if (!m || !json || !json[0])
		return NULL;
	return field_in(m, json, 0);
}

const struct kt_field *kt_field_num(const struct kt_message *m, uint32_t num)
{
	if (!m)
		return NULL;
	for (uint16_t i = 0; i < m->nfields; i++)
		if (m->fields[i].num == num)
			return &m->fields[i];
	return NULL;
}

size_t kt_count(void)
{
	return kt_gen_nmessages;
}

const struct kt_message *kt_at(size_t i)
{
	return i < kt_gen_nmessages ? &kt_gen_messages[i] : NULL;
}
