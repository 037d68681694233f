// Objects a process has just written or read, kept uncompressed in memory and served to several
// repository handles: a sync's checkout then reads its new folder trees, the old ones and the new
// manifest without inflating them again from the packs it wrote them to.
#include "object_capture.h"
#include "object_table.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct tidemark_memo {
    pthread_rwlock_t lock;
    object_table table;
    size_t bytes, budget;
    atomic_int references;
};

tidemark_memo *tidemark_memo_new(size_t budget) {
    tidemark_memo *memo = calloc(1, sizeof *memo);
    if (!memo) return NULL;
    if (pthread_rwlock_init(&memo->lock, NULL) != 0) {
        free(memo);
        return NULL;
    }
    memo->budget = budget;
    atomic_init(&memo->references, 1);
    return memo;
}

void tidemark_memo_release(tidemark_memo *memo) {
    if (atomic_fetch_sub(&memo->references, 1) != 1) return;
    table_free(&memo->table);
    pthread_rwlock_destroy(&memo->lock);
    free(memo);
}

int tidemark_memo_add(tidemark_memo *memo, const unsigned char id[20], int type, const void *data, size_t length) {
    table_object object = {.type = (git_object_t)type, .length = length};
    memcpy(object.id.id, id, 20);
    pthread_rwlock_rdlock(&memo->lock);
    int held = table_find(&memo->table, &object.id) >= 0;
    int skip = held || memo->bytes + length > memo->budget;
    pthread_rwlock_unlock(&memo->lock);
    if (skip) return held ? 2 : 0;
    // Copied outside the lock: a 7 MB manifest does not hold up readers.
    object.data = malloc(length ? length : 1);
    if (!object.data) return -1;
    memcpy(object.data, data, length);
    pthread_rwlock_wrlock(&memo->lock);
    int added;
    if (table_find(&memo->table, &object.id) >= 0) {
        added = 2;  // another thread added it meanwhile
    } else if (memo->bytes + length > memo->budget) {
        added = 0;
    } else {
        added = table_insert(&memo->table, &object);
        if (added == 1) memo->bytes += length;
    }
    pthread_rwlock_unlock(&memo->lock);
    if (added != 1) free(object.data);
    return added;
}

void tidemark_memo_clear(tidemark_memo *memo) {
    pthread_rwlock_wrlock(&memo->lock);
    table_clear(&memo->table);
    memo->bytes = 0;
    pthread_rwlock_unlock(&memo->lock);
}

size_t tidemark_memo_bytes(tidemark_memo *memo) {
    pthread_rwlock_rdlock(&memo->lock);
    size_t bytes = memo->bytes;
    pthread_rwlock_unlock(&memo->lock);
    return bytes;
}

typedef struct {
    git_odb_backend parent;
    tidemark_memo *memo;
} memo_backend;

static int memo_read(void **out, size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    tidemark_memo *memo = ((memo_backend *)backend)->memo;
    int rc = GIT_ENOTFOUND;
    pthread_rwlock_rdlock(&memo->lock);
    long index = table_find(&memo->table, id);
    if (index >= 0) {
        const table_object *object = &memo->table.objects[index];
        *out = git_odb_backend_data_alloc(backend, object->length);
        if (*out) {
            memcpy(*out, object->data, object->length);
            *length = object->length;
            *type = object->type;
            rc = 0;
        } else {
            rc = -1;
        }
    }
    pthread_rwlock_unlock(&memo->lock);
    return rc;
}

static int memo_read_header(size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    tidemark_memo *memo = ((memo_backend *)backend)->memo;
    pthread_rwlock_rdlock(&memo->lock);
    long index = table_find(&memo->table, id);
    if (index >= 0) {
        *length = memo->table.objects[index].length;
        *type = memo->table.objects[index].type;
    }
    pthread_rwlock_unlock(&memo->lock);
    return index >= 0 ? 0 : GIT_ENOTFOUND;
}

static int memo_exists(git_odb_backend *backend, const git_oid *id) {
    tidemark_memo *memo = ((memo_backend *)backend)->memo;
    pthread_rwlock_rdlock(&memo->lock);
    long index = table_find(&memo->table, id);
    pthread_rwlock_unlock(&memo->lock);
    return index >= 0;
}

static void memo_backend_free(git_odb_backend *backend) {
    tidemark_memo_release(((memo_backend *)backend)->memo);
    free(backend);
}

int tidemark_memo_backend_new(git_odb_backend **out, tidemark_memo *memo) {
    memo_backend *b = calloc(1, sizeof *b);
    if (!b) return -1;
    if (git_odb_init_backend(&b->parent, GIT_ODB_BACKEND_VERSION) < 0) {
        free(b);
        return -1;
    }
    b->parent.read = memo_read;
    b->parent.read_header = memo_read_header;
    b->parent.exists = memo_exists;
    b->parent.free = memo_backend_free;
    atomic_fetch_add(&memo->references, 1);
    b->memo = memo;
    *out = &b->parent;
    return 0;
}
