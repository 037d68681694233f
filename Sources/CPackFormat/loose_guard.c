// Loose objects read whole and checked before libgit2's own loose backend would read them.
//
// libgit2 1.5 never returns from reading a loose object whose zlib stream is cut short (a crash or
// a full disk during a write, a damaged disk): its inflate loop takes zlib's Z_BUF_ERROR for
// progress. This backend sits after the pack backend and before the loose one (see
// `tidemark_loose_guard_new`): it reads the file, inflates it with libdeflate (which needs the
// whole stream and says when it is not), checks the header, that nothing follows the stream and
// the SHA-1, and either serves the object or fails with an error naming it, as git does ("loose
// object ... is corrupt").
#include "loose_guard.h"
#include "pack_format.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    git_odb_backend parent;
    char *objects;  // the objects folder, ending in '/'
} guard_backend;

// An object read from a loose file: its type, and its body within `data` (malloc'd).
typedef struct {
    unsigned char *data;
    size_t body, length;
    git_object_t type;
} loose_object;

// Reads all of `fd`, a regular file; returns the bytes (malloc'd) and their count, or NULL: not a
// regular file (`*failure` 0), or the errno of a read that failed.
static unsigned char *read_all(int fd, size_t *count, int *failure) {
    struct stat info;
    if (fstat(fd, &info) != 0) {
        *failure = errno;
        return NULL;
    }
    if (!S_ISREG(info.st_mode) || info.st_size < 0) return NULL;
    size_t size = (size_t)info.st_size;
    unsigned char *bytes = malloc(size ? size : 1);
    if (!bytes) {
        *failure = ENOMEM;
        return NULL;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t got = read(fd, bytes + done, size - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            *failure = errno;
            free(bytes);
            return NULL;
        }
        if (got == 0) break;
        done += (size_t)got;
    }
    *count = done;
    return bytes;
}

static int fail(const git_oid *id, const char *path, const char *what, const char *reason) {
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, id);
    char message[1024];
    snprintf(message, sizeof message, "loose object %s (stored in %s) %s: %s", hex, path, what, reason);
    git_error_set_str(GIT_ERROR_ODB, message);
    return -1;
}

// A damaged object: libgit2's error set, as git words it.
static int corrupt(const git_oid *id, const char *path, const char *reason) { return fail(id, path, "is corrupt", reason); }

// A file that cannot be read (permissions, an I/O error).
static int unreadable(const git_oid *id, const char *path, int error) { return fail(id, path, "cannot be read", strerror(error)); }

// 0 with `object` filled; GIT_PASSTHROUGH when libgit2's loose backend should look (no such file,
// or a folder in its place); -1 with libgit2's error set.
static int read_loose(loose_object *object, guard_backend *guard, const git_oid *id) {
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, id);
    size_t folder = strlen(guard->objects);
    char *path = malloc(folder + GIT_OID_HEXSZ + 2);
    if (!path) {
        git_error_set_oom();
        return -1;
    }
    memcpy(path, guard->objects, folder);
    memcpy(path + folder, hex, 2);
    path[folder + 2] = '/';
    memcpy(path + folder + 3, hex + 2, GIT_OID_HEXSZ - 2);
    path[folder + GIT_OID_HEXSZ + 1] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int error = errno;
        int rc = GIT_PASSTHROUGH;
        // Missing (packed, or in no backend), or a name too long: libgit2 says what it finds.
        if (error != ENOENT && error != ENOTDIR && error != ENAMETOOLONG) rc = unreadable(id, path, error);
        free(path);
        return rc;
    }
    size_t count = 0;
    int failure = 0;
    unsigned char *compressed = read_all(fd, &count, &failure);
    close(fd);
    int rc = GIT_PASSTHROUGH;
    if (!compressed) {
        // A folder in its place is no object: libgit2's "not found" says so.
        if (failure) rc = unreadable(id, path, failure);
        goto done;
    }
    if (count < 2) {
        rc = corrupt(id, path, count ? "its zlib stream is cut short or damaged" : "the file is empty");
        goto done;
    }
    // A zlib header (deflate, a check multiple of 31). git reads no other format (2.39 refuses the
    // old "experimental" pack-like loose objects), and libgit2's reader of those hangs on one cut short.
    if ((compressed[0] & 0x0f) != 8 || ((compressed[0] << 8) | compressed[1]) % 31 != 0) {
        rc = corrupt(id, path, "it does not start with a zlib header");
        goto done;
    }
    size_t capacity = count * 4 + 64 > 4096 ? count * 4 + 64 : 4096;
    for (;;) {
        unsigned char *out = malloc(capacity);
        if (!out) {
            git_error_set_oom();
            rc = -1;
            goto done;
        }
        size_t produced = 0;
        int status = tidemark_zlib_inflate_whole(compressed, count, out, capacity, &produced);
        if (status == 1 && capacity < ((size_t)1 << 40)) {
            free(out);
            capacity *= 4;
            continue;
        }
        if (status != 0) {
            free(out);
            rc = corrupt(id, path, status == 2 ? "garbage at its end" : "its zlib stream is cut short or damaged");
            goto done;
        }
        // "<type> <size>\0<body>"
        unsigned char *nul = memchr(out, 0, produced < 64 ? produced : 64);
        unsigned char *space = nul ? memchr(out, ' ', (size_t)(nul - out)) : NULL;
        git_object_t type = GIT_OBJECT_INVALID;
        unsigned long long size = 0;
        char *end = NULL;
        if (space && space - out < 16 && space[1] >= '0' && space[1] <= '9') {
            char name[16];
            memcpy(name, out, (size_t)(space - out));
            name[space - out] = 0;
            type = git_object_string2type(name);
            size = strtoull((const char *)space + 1, &end, 10);
        }
        if ((type != GIT_OBJECT_COMMIT && type != GIT_OBJECT_TREE && type != GIT_OBJECT_BLOB && type != GIT_OBJECT_TAG) ||
            end != (char *)nul || size != produced - (size_t)(nul + 1 - out)) {
            free(out);
            rc = corrupt(id, path, "its header does not match its contents");
            goto done;
        }
        tidemark_sha1 sha;
        uint8_t digest[20];
        tidemark_sha1_init(&sha);
        tidemark_sha1_update(&sha, out, produced);
        tidemark_sha1_final(&sha, digest);
        if (memcmp(digest, id->id, 20) != 0) {
            free(out);
            git_oid held;
            char reason[80];
            memcpy(held.id, digest, 20);
            snprintf(reason, sizeof reason, "it holds another object (%s)", git_oid_tostr_s(&held));
            rc = corrupt(id, path, reason);
            goto done;
        }
        object->data = out;
        object->body = (size_t)(nul + 1 - out);
        object->length = (size_t)size;
        object->type = type;
        rc = 0;
        break;
    }
done:
    free(compressed);
    free(path);
    return rc;
}

static int guard_read(void **out, size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    loose_object object;
    int rc = read_loose(&object, (guard_backend *)backend, id);
    if (rc != 0) return rc;
    *out = git_odb_backend_data_alloc(backend, object.length);
    if (*out) memcpy(*out, object.data + object.body, object.length);
    free(object.data);
    if (!*out) {
        git_error_set_oom();
        return -1;
    }
    *length = object.length;
    *type = object.type;
    return 0;
}

static int guard_read_header(size_t *length, git_object_t *type, git_odb_backend *backend, const git_oid *id) {
    loose_object object;
    int rc = read_loose(&object, (guard_backend *)backend, id);
    if (rc != 0) return rc;
    free(object.data);
    *length = object.length;
    *type = object.type;
    return 0;
}

static void guard_free(git_odb_backend *backend) {
    free(((guard_backend *)backend)->objects);
    free(backend);
}

int tidemark_loose_guard_new(struct git_odb_backend **out, const char *objects) {
    guard_backend *guard = calloc(1, sizeof *guard);
    if (!guard) return -1;
    size_t length = strlen(objects);
    guard->objects = malloc(length + 2);
    if (!guard->objects || git_odb_init_backend(&guard->parent, GIT_ODB_BACKEND_VERSION) < 0) {
        free(guard->objects);
        free(guard);
        return -1;
    }
    memcpy(guard->objects, objects, length);
    if (length == 0 || objects[length - 1] != '/') guard->objects[length++] = '/';
    guard->objects[length] = 0;
    guard->parent.read = guard_read;
    guard->parent.read_header = guard_read_header;
    guard->parent.free = guard_free;
    *out = &guard->parent;
    return 0;
}
