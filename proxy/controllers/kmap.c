/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small chained hash map from strings to owned values, used for the work
 * queue's de-duplication, delayed keys and the garbage collector's index.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/kmap.h"

struct kent {
	struct kent *next;
	void *val;
	char key[];
};

struct kmap {
	struct kent **b;
	size_t nb, n;
	void (*free_val)(void *);
};

static size_t khash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

struct kmap *kmap_new(void (*free_val)(void *))
{
	struct kmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->nb = 64;
	m->b = calloc(m->nb, sizeof(*m->b));
	if (!m->b) {
		free(m);
		return NULL;
	}
	m->free_val = free_val;
	return m;
}

void kmap_free(struct kmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nb; i++) {
		struct kent *e = m->b[i];
		while (e) {
			struct kent *next = e->next;
			if (m->free_val && e->val)
				m->free_val(e->val);
			free(e);
			e = next;
		}
	}
	free(m->b);
	free(m);
}

static struct kent **kfind(const struct kmap *m, const char *key)
{
	struct kent **p = &m->b[khash(key) & (m->nb - 1)];
	while (*p && strcmp((*p)->key, key) != 0)
		p = &(*p)->next;
	return p;
}

void *kmap_get(const struct kmap *m, const char *key)
{
	struct kent *e = *kfind(m, key);
	return e ? e->val : NULL;
}

bool kmap_has(const struct kmap *m, const char *key)
{
	return *kfind(m, key) != NULL;
}

static void kgrow(struct kmap *m)
{
	size_t nb = m->nb * 2;
	struct kent **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < m->nb; i++) {
		struct kent *e = m->b[i];
		while (e) {
			struct kent *next = e->next;
			size_t h = khash(e->key) & (nb - 1);
			e->next = b[h];
			b[h] = e;
			e = next;
		}
	}
	free(m->b);
	m->b = b;
	m->nb = nb;
}

int kmap_put(struct kmap *m, const char *key, void *val)
{
	struct kent **p = kfind(m, key);
	if (*p) {
		if (m->free_val && (*p)->val && (*p)->val != val)
			m->free_val((*p)->val);
		(*p)->val = val;
		return 0;
	}
	size_t kl = strlen(key);
	struct kent *e = malloc(sizeof(*e) + kl + 1);
	if (!e)
		return -ENOMEM;
	memcpy(e->key, key, kl + 1);
	e->val = val;
	e->next = NULL;
	*p = e;
	if (++m->n > m->nb)
		kgrow(m);
	return 0;
}

void kmap_del(struct kmap *m, const char *key)
{
	struct kent **p = kfind(m, key);
	struct kent *e = *p;
	if (!e)
		return;
	*p = e->next;
	if (m->free_val && e->val)
		m->free_val(e->val);
	free(e);
	m->n--;
}

size_t kmap_size(const struct kmap *m)
{
	return m ? m->n : 0;
}

void kmap_each(const struct kmap *m, void (*fn)(const char *key, void *val, void *arg), void *arg)
{
	for (size_t i = 0; i < m->nb; i++)
		for (struct kent *e = m->b[i]; e; e = e->next)
			fn(e->key, e->val, arg);
}
