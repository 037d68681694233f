#ifndef TIDEMARK_LOOSE_GUARD_H
#define TIDEMARK_LOOSE_GUARD_H

struct git_odb_backend;

/// A read-only object database backend for the loose objects under `objects` (a repository's
/// objects folder): it reads each whole, inflates it with libdeflate and checks its header and
/// SHA-1, then serves it, or fails naming it as corrupt. libgit2 1.5's own loose backend never
/// returns from an object whose zlib stream is cut short. Add it to the repository's odb with
/// git_odb_add_backend at libgit2's pack priority (2), after the default backends: it then comes
/// after the packs and before libgit2's loose backend (priority 1), which it passes to for a file
/// that is missing or not a zlib stream. The odb owns it.
int tidemark_loose_guard_new(struct git_odb_backend **out, const char *objects);

#endif
