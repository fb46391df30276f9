/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Images on shared nodes. A node keeps the images it pulled; a container
 * whose pull policy lets the kubelet use a cached image (IfNotPresent,
 * Never) runs it without the registry being asked, so one tenant's pod
 * could run another tenant's private image by naming it, on a node where
 * the other tenant's pod pulled it. kube's answer is the AlwaysPullImages
 * admission plugin (plugin/pkg/admission/alwayspullimages/admission.go):
 * Admit sets imagePullPolicy Always on every container of a new pod (init,
 * app and ephemeral: pods.VisitContainersWithPath) and of an update that
 * brings an image the pod did not have (isUpdateWithNoNewImages), and
 * Validate refuses a pod that would still not pull Always after the other
 * mutating plugins. Here (policy_mutate_images):
 *
 * - the floor does what Admit does, on the tenant's pod as stored, so that
 *   the pod the tenant reads says what the host's kubelet does (as kube's
 *   plugin leaves it in the stored pod), and the syncer sets it again on the
 *   host pod (syncer_options.image_pull_any false), a second line for a pod
 *   stored before the rule;
 * - unlike kube's plugin, pods/ephemeralcontainers is not skipped (kube
 *   ignores subresources, so a `kubectl debug` container could use the
 *   node's cache), and an image volume's pullPolicy is set too (it is
 *   pulled into the node's cache as a container's image is);
 * - Validate has nothing to catch: this is the last mutation of the chain
 *   (the tenant's mutating webhooks run before it);
 * - a policy's `imagePullPolicy: any` (trusted tenants, private nodes)
 *   leaves pull policies as written;
 * - a policy's `imageRegistries` (prefixes) limits where images come from:
 *   every container image and image volume reference, of pods and pod
 *   templates, refused at the tenant API naming the field
 *   (policy_image_check).
 *
 * An image is compared as the container runtime resolves it (the
 * distribution reference's normalisation: "busybox" is
 * docker.io/library/busybox, "team/app" docker.io/team/app), and a prefix
 * matches only whole path components or the whole repository
 * ("registry.example.com" matches "registry.example.com/x", never
 * "registry.example.com.evil.io/x").
 */
#include <stdio.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "policies/policies_impl.h"

static const char *const container_lists[] = {"initContainers", "containers",
					      "ephemeralContainers"};

/* ---- pull policy ---- */

/* Whether container list `key` of spec holds an image not in old's spec
 * (every list), as kube's isUpdateWithNoNewImages decides. */
static bool has_image(const json_t *spec, const char *image)
{
	for (size_t l = 0; l < KB_ARRAY_SIZE(container_lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, container_lists[l]), i, c) {
			const char *im = json_string_value(json_object_get(c, "image"));
			if (im && image && strcmp(im, image) == 0)
				return true;
		}
	}
	return false;
}

static bool new_images(const json_t *spec, const json_t *ospec)
{
	for (size_t l = 0; l < KB_ARRAY_SIZE(container_lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, container_lists[l]), i, c)
			if (!has_image(ospec, json_string_value(json_object_get(c, "image"))))
				return true;
	}
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		const char *ref = json_string_value(kb_json_path(v, "image.reference"));
		bool was = false;
		size_t j;
		json_t *o;
		json_array_foreach (json_object_get(ospec, "volumes"), j, o) {
			const char *oref = json_string_value(kb_json_path(o, "image.reference"));
			was |= ref && oref && strcmp(ref, oref) == 0;
		}
		if (ref && !was)
			return true;
	}
	return false;
}

bool policy_image_pull_any(const policy_t *p)
{
	return p && p->image_pull_any;
}

int policy_pull_always(json_t *spec)
{
	int n = 0;
	for (size_t l = 0; l < KB_ARRAY_SIZE(container_lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, container_lists[l]), i, c) {
			const char *pp = json_string_value(json_object_get(c, "imagePullPolicy"));
			if (json_is_object(c) && !(pp && strcmp(pp, "Always") == 0)) {
				json_object_set_new(c, "imagePullPolicy", json_string("Always"));
				n++;
			}
		}
	}
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		json_t *img = json_object_get(v, "image");
		const char *pp = json_string_value(json_object_get(img, "pullPolicy"));
		if (json_is_object(img) && !(pp && strcmp(pp, "Always") == 0)) {
			json_object_set_new(img, "pullPolicy", json_string("Always"));
			n++;
		}
	}
	return n;
}

int policy_mutate_images(const policy_t *p, int floor, json_t *pod, const json_t *old)
{
	json_t *spec = json_object_get(pod, "spec");
	if ((!p && floor < 0) || policy_image_pull_any(p) || !json_is_object(spec))
		return 0;
	if (old && !new_images(spec, json_object_get(old, "spec")))
		return 0; /* kube's isUpdateWithNoNewImages */
	return policy_pull_always(spec);
}

/* ---- registries ---- */

/* The repository of image reference `ref` as the runtime resolves it,
 * into out: "busybox:1" -> "docker.io/library/busybox:1". */
static void normalize(const char *ref, char *out, size_t len)
{
	const char *slash = strchr(ref, '/');
	size_t first = slash ? (size_t)(slash - ref) : 0;
	bool domain = slash && (memchr(ref, '.', first) || memchr(ref, ':', first) ||
				(first == 9 && strncmp(ref, "localhost", 9) == 0));
	if (domain)
		snprintf(out, len, "%s", ref);
	else if (slash)
		snprintf(out, len, "docker.io/%s", ref);
	else
		snprintf(out, len, "docker.io/library/%s", ref);
}

/* Whether `prefix` (a normalised policy entry) covers image `full`
 * (normalised): equal up to a component boundary: '/', or the tag ':' or
 * digest '@' of the last component only (a ':' with a '/' after it is a
 * registry's port: "myorg:5000/x" is another host than "myorg"). */
static bool covers(const char *prefix, const char *full)
{
	size_t n = strlen(prefix);
	if (n && prefix[n - 1] == '/')
		return strncmp(full, prefix, n) == 0;
	if (strncmp(full, prefix, n) != 0)
		return false;
	char next = full[n];
	return next == '\0' || next == '/' ||
	       ((next == ':' || next == '@') && !strchr(full + n, '/'));
}

static bool registry_ok(const policy_t *p, const char *image)
{
	char full[1024], prefix[1024];
	normalize(image, full, sizeof(full));
	size_t i;
	json_t *e;
	json_array_foreach (p->image_registries, i, e) {
		const char *s = json_string_value(e);
		if (s && strcmp(s, "*") == 0)
			return true;
		if (!s)
			continue;
		/* an entry of one component with a '.' or ':' (or "localhost")
		 * names a registry; any other is normalised as an image */
		if (!strchr(s, '/') && (strpbrk(s, ".:") || strcmp(s, "localhost") == 0))
			snprintf(prefix, sizeof(prefix), "%s", s);
		else
			normalize(s, prefix, sizeof(prefix));
		if (covers(prefix, full))
			return true;
	}
	return false;
}

static int registry_refuse(const policy_t *p, const char *field, const char *image, char *msg,
			   size_t len)
{
	char allowed[512] = "";
	size_t i;
	json_t *e;
	json_array_foreach (p->image_registries, i, e)
		policy_msg_add(allowed, sizeof(allowed), "%s", json_string_value(e));
	policy_msg_add(msg, len, "%s: image \"%s\" is not from an allowed registry; allowed: %s",
		       field, image, allowed[0] ? allowed : "none");
	return 1;
}

int policy_image_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	if (!p || !p->image_registries)
		return 0;
	int n = 0;
	char f[128];
	for (size_t l = 0; l < KB_ARRAY_SIZE(container_lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, container_lists[l]), i, c) {
			const char *im = json_string_value(json_object_get(c, "image"));
			if (!im || registry_ok(p, im))
				continue;
			snprintf(f, sizeof(f), "spec.%s[%zu].image", container_lists[l], i);
			n += registry_refuse(p, f, im, msg, len);
		}
	}
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		const char *ref = json_string_value(kb_json_path(v, "image.reference"));
		if (!ref || registry_ok(p, ref))
			continue;
		snprintf(f, sizeof(f), "spec.volumes[%zu].image.reference", i);
		n += registry_refuse(p, f, ref, msg, len);
	}
	return n;
}
