#ifndef TIDEMARK_OBJECT_CAPTURE_H
#define TIDEMARK_OBJECT_CAPTURE_H

#include <stddef.h>

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

#endif
