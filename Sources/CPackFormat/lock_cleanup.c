#include "lock_cleanup.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

// Everything the handler touches is set before it is installed: it only calls async-signal-safe
// functions (open, read, close, unlink, sigaction, raise).
static const int watched[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define WATCHED (sizeof(watched) / sizeof(watched[0]))
static struct sigaction previous[WATCHED];
static char lock_path[4096], temporary_path[4096], lock_token[256];
static size_t token_length;
static volatile sig_atomic_t any_content;
static volatile sig_atomic_t armed;
static int installed;

static int lock_is_own(void) {
    int fd = open(lock_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    if (any_content) {
        close(fd);
        return 1;
    }
    char read_back[256];
    ssize_t got = read(fd, read_back, sizeof(read_back));
    close(fd);
    return got == (ssize_t)token_length && memcmp(read_back, lock_token, token_length) == 0;
}

static void on_signal(int number) {
    if (armed) {
        armed = 0;
        // The temporary file is this process's only while the lock is: before it took the lock,
        // another process holding it may be writing a file of that name.
        if (lock_is_own()) {
            if (temporary_path[0]) unlink(temporary_path);
            unlink(lock_path);
        }
    }
    for (size_t i = 0; i < WATCHED; i++) {
        if (watched[i] == number) sigaction(number, &previous[i], NULL);
    }
    raise(number);
}

int tidemark_lock_cleanup_arm(const char *lock, const char *token, const char *temporary) {
    // Armed twice, the saved actions would be this handler's own, and a signal would loop.
    if (installed) return -1;
    size_t lock_length = strlen(lock), temporary_length = temporary ? strlen(temporary) : 0;
    any_content = token == NULL;
    if (any_content) token = "";
    token_length = strlen(token);
    if (lock_length >= sizeof(lock_path) || temporary_length >= sizeof(temporary_path) || token_length >= sizeof(lock_token)) {
        return -1;
    }
    memcpy(lock_path, lock, lock_length + 1);
    memcpy(lock_token, token, token_length + 1);
    if (temporary) memcpy(temporary_path, temporary, temporary_length + 1); else temporary_path[0] = 0;
    armed = 1;
    installed = 1;
    for (size_t i = 0; i < WATCHED; i++) {
        // A signal the process was ignoring (nohup's SIGHUP, a background job's SIGINT) stays so.
        sigaction(watched[i], NULL, &previous[i]);
        if (previous[i].sa_handler == SIG_IGN) continue;
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_handler = on_signal;
        sigemptyset(&action.sa_mask);
        sigaction(watched[i], &action, NULL);
    }
    return 0;
}

void tidemark_lock_cleanup_disarm(void) {
    if (!installed) return;
    installed = 0;
    armed = 0;
    for (size_t i = 0; i < WATCHED; i++) {
        if (previous[i].sa_handler != SIG_IGN) sigaction(watched[i], &previous[i], NULL);
    }
}

void tidemark_lock_cleanup_any(int any) { any_content = any ? 1 : 0; }
