#ifndef TIDEMARK_LOCK_CLEANUP_H
#define TIDEMARK_LOCK_CLEANUP_H

/// While armed, SIGINT, SIGTERM, SIGHUP and SIGQUIT first remove `temporary` and `lock` when the
/// lock holds `token` (is this process's), then end the process by that signal as they would have: git removes
/// its lock files the same way. With a NULL `token`, whatever lock file is there is this
/// process's (libgit2 writing the index on its behalf). A signal the process ignores stays
/// ignored. One lock at a time. Returns 0,
/// or -1 when it is armed already or a path or the token is too long to keep (nothing changes then).
int tidemark_lock_cleanup_arm(const char *lock, const char *token, const char *temporary);

/// While `any` is nonzero, the armed handler takes whatever lock file is there for this
/// process's, as with a NULL token (from the moment the lock file is created exclusively to the
/// moment its token is written).
void tidemark_lock_cleanup_any(int any);

/// Puts the signals' previous actions back (nothing when not armed), unless the download
/// window still holds the handler.
void tidemark_lock_cleanup_disarm(void);

/// Opens the download window: until it closes, SIGINT, SIGTERM and SIGHUP are only noted (the
/// first one, read by `tidemark_signal_window_received`), the lock files left alone; the process
/// stops its work and ends by the signal itself. The same handler serves the lock clean-up, so
/// neither puts back the other's action. A signal the process ignores stays ignored.
void tidemark_signal_window_open(void);

/// Closes the download window: the signals act as before it opened (the lock clean-up's, while
/// a lock is armed).
void tidemark_signal_window_close(void);

/// The first signal noted since the window opened, or 0.
int tidemark_signal_window_received(void);

#endif
