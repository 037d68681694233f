#ifndef TIDEMARK_OBJECT_CAPTURE_H
#define TIDEMARK_OBJECT_CAPTURE_H

#include <stddef.h>

// Object database backends kept in memory: a capture backend (what a handle writes), a proxy (another
// database's objects) and a memo (objects several handles read).

// libgit2's types, left opaque here so this header does not pull in git2.h.
struct git_odb_backend;
struct git_odb;

/// A new object database backend that keeps what is written to it in memory (and serves it back
/// to reads), to be added to a repository's odb with git_odb_add_backend, which then owns it.
int tidemark_capture_new(struct git_odb_backend **out);

/// How many objects the backend holds.
size_t tidemark_capture_count(struct git_odb_backend *backend);

/// The object at `index` (in the order written): its 20-byte id, git_object_t type and data,
/// which stays owned by the backend.
int tidemark_capture_object(struct git_odb_backend *backend, size_t index, unsigned char id[20], int *type,
                            const void **data, size_t *length);

/// Moves every object of capture backend `from` into capture backend `into` (which keeps one
/// copy of each id); `from` is left empty.
void tidemark_capture_take(struct git_odb_backend *into, struct git_odb_backend *from);

/// A new read-only backend serving the objects of `target` (reads, headers, existence checks),
/// never refreshing `target` on a miss. The backend takes over the caller's reference to `target`.
int tidemark_proxy_new(struct git_odb_backend **out, struct git_odb *target);

/// Objects kept in memory, uncompressed, up to a budget of bytes, for backends that serve them to
/// the object databases of several repository handles (one backend per database). Thread-safe.
/// Reference-counted: the creator holds one reference and each backend another.
typedef struct tidemark_memo tidemark_memo;

/// A new, empty memo holding at most `budget` bytes of object data; NULL when out of memory.
tidemark_memo *tidemark_memo_new(size_t budget);

/// Drops one reference; the last one frees the memo and its objects.
void tidemark_memo_release(tidemark_memo *memo);

/// Keeps a copy of an object (`type` a git_object_t) unless the memo holds it already or it would
/// exceed the budget. Returns 1 when kept, 2 when held already, 0 when not kept (the budget), -1
/// when out of memory.
int tidemark_memo_add(tidemark_memo *memo, const unsigned char id[20], int type, const void *data, size_t length);

/// Forgets every object (the backends stay, serving nothing).
void tidemark_memo_clear(tidemark_memo *memo);

/// The bytes of object data the memo holds.
size_t tidemark_memo_bytes(tidemark_memo *memo);

/// A new read-only backend serving the memo's objects (reads, headers, existence checks), which
/// takes a reference to it; for git_odb_add_backend, whose database then owns it.
int tidemark_memo_backend_new(struct git_odb_backend **out, tidemark_memo *memo);

#endif
