// An object database backend that keeps the objects written to it in memory, so GitStore can
// write them out as one pack (libgit2's mempack backend dumps only what commits reach, which
// for a tree would be the whole snapshot again).
#include "object_capture.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    git_oid id;
    git_object_t type;
    void *data;
    size_t length;
} captured_object;

typedef struct {
    git_odb_backend parent;
    captured_object *objects;
    size_t count, capacity;
    int32_t *slots;  // open addressing over object indexes, -1 when empty
    size_t slot_count;
} capture_backend;

static size_t slot_of(const git_oid *id, size_t slot_count) {
    uint64_t hash;
    memcpy(&hash, id->id, sizeof hash);  // object ids are uniformly distributed
    return (size_t)hash & (slot_count - 1);
}

static long find(const capture_backend *c, const git_oid *id) {
    if (c->slot_count == 0) return -1;
    for (size_t slot = slot_of(id, c->slot_count);; slot = (slot + 1) & (c->slot_count - 1)) {
        int32_t index = c->slots[slot];
        if (index < 0) return -1;
        if (git_oid_equal(&c->objects[index].id, id)) return index;
    }
}

static int grow(capture_backend *c) {
    size_t capacity = c->capacity ? c->capacity * 2 : 64;
    captured_object *objects = realloc(c->objects, capacity * sizeof *objects);
    if (!objects) return -1;
    c->objects = objects;
    c->capacity = capacity;
    size_t slot_count = capacity * 2;
    int32_t *slots = malloc(slot_count * sizeof *slots);
    if (!slots) return -1;
    memset(slots, 0xff, slot_count * sizeof *slots);
    for (size_t i = 0; i < c->count; i++) {
        size_t slot = slot_of(&c->objects[i].id, slot_count);
        while (slots[slot] >= 0) slot = (slot + 1) & (slot_count - 1);
        slots[slot] = (int32_t)i;
    }
    free(c->slots);
    c->slots = slots;
    c->slot_count = slot_count;
    return 0;
}

static int capture_write(git_odb_backend *backend, const git_oid *id, const void *data, size_t length, git_object_t type) {
    capture_backend *c = (capture_backend *)backend;
    if (find(c, id) >= 0) return 0;
    if (c->count == c->capacity && grow(c) < 0) return -1;
    void *copy = malloc(length ? length : 1);
    if (!copy) return -1;
    memcpy(copy, data, length);
    captured_object *object = &c->objects[c->count];
    git_oid_cpy(&object->id, id);
    object->type = type;
    object->data = copy;
    object->length = length;
    size_t slot = slot_of(id, c->slot_count);
    while (c->slots[slot] >= 0) slot = (slot + 1) & (c->slot_count - 1);
    c->slots[slot] = (int32_t)c->count;
    c->count++;
    return 0;
}

static int capture_read(void **out, size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    capture_backend *c = (capture_backend *)backend;
    long index = find(c, id);
    if (index < 0) return GIT_ENOTFOUND;
    const captured_object *object = &c->objects[index];
    *out = git_odb_backend_data_alloc(backend, object->length);
    if (!*out) return -1;
    memcpy(*out, object->data, object->length);
    *length = object->length;
    *type = object->type;
    return 0;
}

static int capture_read_header(size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    capture_backend *c = (capture_backend *)backend;
    long index = find(c, id);
    if (index < 0) return GIT_ENOTFOUND;
    *length = c->objects[index].length;
    *type = c->objects[index].type;
    return 0;
}

static int capture_exists(git_odb_backend *backend, const git_oid *id) {
    return find((capture_backend *)backend, id) >= 0;
}

static void capture_free(git_odb_backend *backend) {
    capture_backend *c = (capture_backend *)backend;
    for (size_t i = 0; i < c->count; i++) free(c->objects[i].data);
    free(c->objects);
    free(c->slots);
    free(c);
}

int tidemark_capture_new(git_odb_backend **out) {
    capture_backend *c = calloc(1, sizeof *c);
    if (!c) return -1;
    if (git_odb_init_backend(&c->parent, GIT_ODB_BACKEND_VERSION) < 0) {
        free(c);
        return -1;
    }
    c->parent.read = capture_read;
    c->parent.read_header = capture_read_header;
    c->parent.write = capture_write;
    c->parent.exists = capture_exists;
    c->parent.free = capture_free;
    *out = &c->parent;
    return 0;
}

size_t tidemark_capture_count(git_odb_backend *backend) {
    return ((capture_backend *)backend)->count;
}

int tidemark_capture_object(git_odb_backend *backend, size_t index, unsigned char id[20], int *type,
                            const void **data, size_t *length) {
    capture_backend *c = (capture_backend *)backend;
    if (index >= c->count) return -1;
    memcpy(id, c->objects[index].id.id, 20);
    *type = (int)c->objects[index].type;
    *data = c->objects[index].data;
    *length = c->objects[index].length;
    return 0;
}

void tidemark_capture_take(git_odb_backend *into, git_odb_backend *from) {
    capture_backend *target = (capture_backend *)into, *source = (capture_backend *)from;
    for (size_t i = 0; i < source->count; i++) {
        captured_object *object = &source->objects[i];
        if (find(target, &object->id) >= 0 || (target->count == target->capacity && grow(target) < 0)) {
            free(object->data);
            continue;
        }
        target->objects[target->count] = *object;
        size_t slot = slot_of(&object->id, target->slot_count);
        while (target->slots[slot] >= 0) slot = (slot + 1) & (target->slot_count - 1);
        target->slots[slot] = (int32_t)target->count;
        target->count++;
    }
    source->count = 0;
    memset(source->slots, 0xff, source->slot_count * sizeof *source->slots);
}

// A read-only backend serving the objects of another object database. Behind a capture backend,
// it lets a scratch odb read a repository's objects without opening its packs again; it has no
// refresh, and its existence checks do not refresh the other odb, so writing a new object (which
// libgit2 first looks up, then refreshes every backend and looks up again) costs no rescan of the
// pack folder.
typedef struct {
    git_odb_backend parent;
    git_odb *target;
} proxy_backend;

static int proxy_read(void **out, size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    proxy_backend *p = (proxy_backend *)backend;
    if (!git_odb_exists_ext(p->target, id, GIT_ODB_LOOKUP_NO_REFRESH)) return GIT_ENOTFOUND;
    git_odb_object *object;
    int rc = git_odb_read(&object, p->target, id);
    if (rc < 0) return rc;
    size_t size = git_odb_object_size(object);
    *out = git_odb_backend_data_alloc(backend, size);
    if (!*out) {
        git_odb_object_free(object);
        return -1;
    }
    memcpy(*out, git_odb_object_data(object), size);
    *length = size;
    *type = git_odb_object_type(object);
    git_odb_object_free(object);
    return 0;
}

static int proxy_read_header(size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    proxy_backend *p = (proxy_backend *)backend;
    if (!git_odb_exists_ext(p->target, id, GIT_ODB_LOOKUP_NO_REFRESH)) return GIT_ENOTFOUND;
    return git_odb_read_header(length, type, p->target, id);
}

static int proxy_exists(git_odb_backend *backend, const git_oid *id) {
    return git_odb_exists_ext(((proxy_backend *)backend)->target, id, GIT_ODB_LOOKUP_NO_REFRESH);
}

// Before writing an object, libgit2 asks each backend whether it already holds it (to "freshen"
// it instead). The new trees of a sync are almost never in the repository, and the answer costs
// a search of every pack and a stat of the loose path: the proxy answers "not here" at once. A
// tree that did exist is then written again, into the new pack, which git allows.
static int proxy_freshen(git_odb_backend *backend, const git_oid *id) {
    (void)backend;
    (void)id;
    return GIT_ENOTFOUND;
}

static void proxy_free(git_odb_backend *backend) {
    git_odb_free(((proxy_backend *)backend)->target);
    free(backend);
}

int tidemark_proxy_new(git_odb_backend **out, git_odb *target) {
    proxy_backend *p = calloc(1, sizeof *p);
    if (!p) return -1;
    if (git_odb_init_backend(&p->parent, GIT_ODB_BACKEND_VERSION) < 0) {
        free(p);
        return -1;
    }
    p->parent.read = proxy_read;
    p->parent.read_header = proxy_read_header;
    p->parent.exists = proxy_exists;
    p->parent.freshen = proxy_freshen;
    p->parent.free = proxy_free;
    p->target = target;
    *out = &p->parent;
    return 0;
}
