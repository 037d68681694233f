// An object database backend that keeps the objects written to it in memory, so GitStore can
// write them out as one pack (libgit2's mempack backend dumps only what commits reach, which
// for a tree would be the whole snapshot again).
#include "object_capture.h"
#include "object_table.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    git_odb_backend parent;
    object_table table;
} capture_backend;

static int capture_write(git_odb_backend *backend, const git_oid *id, const void *data, size_t length, git_object_t type) {
    capture_backend *c = (capture_backend *)backend;
    if (table_find(&c->table, id) >= 0) return 0;
    table_object object = {.type = type, .data = malloc(length ? length : 1), .length = length};
    if (!object.data) return -1;
    memcpy(object.data, data, length);
    git_oid_cpy(&object.id, id);
    if (table_insert(&c->table, &object) < 0) {
        free(object.data);
        return -1;
    }
    return 0;
}

static int capture_read(void **out, size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    capture_backend *c = (capture_backend *)backend;
    long index = table_find(&c->table, id);
    if (index < 0) return GIT_ENOTFOUND;
    const table_object *object = &c->table.objects[index];
    *out = git_odb_backend_data_alloc(backend, object->length);
    if (!*out) return -1;
    memcpy(*out, object->data, object->length);
    *length = object->length;
    *type = object->type;
    return 0;
}

static int capture_read_header(size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    capture_backend *c = (capture_backend *)backend;
    long index = table_find(&c->table, id);
    if (index < 0) return GIT_ENOTFOUND;
    *length = c->table.objects[index].length;
    *type = c->table.objects[index].type;
    return 0;
}

static int capture_exists(git_odb_backend *backend, const git_oid *id) {
    return table_find(&((capture_backend *)backend)->table, id) >= 0;
}

static void capture_free(git_odb_backend *backend) {
    capture_backend *c = (capture_backend *)backend;
    table_free(&c->table);
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
    return ((capture_backend *)backend)->table.count;
}

int tidemark_capture_object(git_odb_backend *backend, size_t index, unsigned char id[20], int *type,
                            const void **data, size_t *length) {
    const object_table *table = &((capture_backend *)backend)->table;
    if (index >= table->count) return -1;
    memcpy(id, table->objects[index].id.id, 20);
    *type = (int)table->objects[index].type;
    *data = table->objects[index].data;
    *length = table->objects[index].length;
    return 0;
}

void tidemark_capture_take(git_odb_backend *into, git_odb_backend *from) {
    object_table *target = &((capture_backend *)into)->table, *source = &((capture_backend *)from)->table;
    for (size_t i = 0; i < source->count; i++) {
        if (table_insert(target, &source->objects[i]) <= 0) free(source->objects[i].data);
    }
    source->count = 0;
    table_clear(source);
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
