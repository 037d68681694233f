#ifndef TIDEMARK_LOCK_CLEANUP_H
#define TIDEMARK_LOCK_CLEANUP_H

/// While armed, SIGINT, SIGTERM, SIGHUP and SIGQUIT first remove `temporary` and `lock` when the
/// lock holds `token` (is this process's), then end the process by that signal as they would have: git removes
/// its lock files the same way. A signal the process ignores stays ignored. Not reentrant: one
/// lock at a time, armed and disarmed on the same thread. Returns 0, or -1 when it is armed
/// already or a path or the token is too long to keep (nothing changes then).
int tidemark_lock_cleanup_arm(const char *lock, const char *token, const char *temporary);

/// Puts the signals' previous actions back (nothing when not armed).
void tidemark_lock_cleanup_disarm(void);

#endif
