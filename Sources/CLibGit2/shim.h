#ifndef TIDEMARK_CLIBGIT2_SHIM_H
#define TIDEMARK_CLIBGIT2_SHIM_H

// Refuse deprecated libgit2 names at compile time.
#define GIT_DEPRECATE_HARD
#include <git2.h>
#include <git2/sys/repository.h>
#include <git2/sys/odb_backend.h>

/// git_libgit2_opts is variadic and cannot be called from Swift.
static inline int tidemark_enable_fsync_gitdir(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, enabled);
}

/// Turns strict object creation on (it is on by default; this makes it explicit).
static inline int tidemark_enable_strict_object_creation(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, enabled);
}

/// Hash verification of every object read. libgit2 turns it on by default; git does not do it.
static inline int tidemark_enable_strict_hash_verification(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, enabled);
}

/// Ownership validation (safe.directory). Tests in containers may turn it off.
static inline int tidemark_set_owner_validation(int enabled) {
    return git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, enabled);
}

/// The number of pack files libgit2 keeps open at once (0, its default, for no limit).
static inline int tidemark_set_mwindow_file_limit(size_t files) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_FILE_LIMIT, files);
}

/// The largest object of `type` the object cache keeps (libgit2 keeps trees up to 4 KiB only).
static inline int tidemark_set_cache_object_limit(git_object_t type, size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, type, bytes);
}

/// The folders libgit2 searches for the config files of `level` (`$HOME` for the global one),
/// separated by ':'; the caller disposes of `out`.
static inline int tidemark_config_search_path(git_config_level_t level, git_buf *out) {
    return git_libgit2_opts(GIT_OPT_GET_SEARCH_PATH, level, out);
}

/// Sets the folders searched for the config files of `level` ("" for none).
static inline int tidemark_set_config_search_path(git_config_level_t level, const char *path) {
    return git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, path);
}

#endif
