#include "lock_cleanup.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

// One handler for two uses, so that neither saves and puts back the other's: the index lock's
// clean-up (armed while a lock file is this process's) and the download window (a fetch listing
// or downloading). Everything the handler touches is set before it is installed: it only calls
// async-signal-safe functions (open, read, close, unlink, sigaction, raise).
static const int watched[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define WATCHED (sizeof(watched) / sizeof(watched[0]))
// The actions the signals had before this handler was installed, and which uses hold it.
static struct sigaction original[WATCHED];
static int users;
enum { USE_LOCK = 1, USE_WINDOW = 2 };
static pthread_mutex_t installing = PTHREAD_MUTEX_INITIALIZER;

static char lock_path[4096], temporary_path[4096], lock_token[256];
static size_t token_length;
static volatile sig_atomic_t any_content;
static volatile sig_atomic_t armed;
static int lock_held;

static volatile sig_atomic_t window_open;
static volatile sig_atomic_t window_signal;

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
    // In the download window, SIGINT, SIGTERM and SIGHUP are noted: the run stops its downloads,
    // stores what it got and ends by the signal itself, its lock files its own to remove.
    if (window_open && number != SIGQUIT) {
        if (!window_signal) window_signal = number;
        return;
    }
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
        if (watched[i] == number) sigaction(number, &original[i], NULL);
    }
    raise(number);
}

// Installs the handler for `use` (under `installing`). A signal the process was ignoring
// (nohup's SIGHUP, a background job's SIGINT) stays ignored.
static void install(int use) {
    if (users == 0) {
        for (size_t i = 0; i < WATCHED; i++) {
            sigaction(watched[i], NULL, &original[i]);
            if (original[i].sa_handler == SIG_IGN) continue;
            struct sigaction action;
            memset(&action, 0, sizeof(action));
            action.sa_handler = on_signal;
            sigemptyset(&action.sa_mask);
            sigaction(watched[i], &action, NULL);
        }
    }
    users |= use;
}

// Puts the original actions back once no use holds the handler (under `installing`).
static void uninstall(int use) {
    if (!(users & use)) return;
    users &= ~use;
    if (users != 0) return;
    for (size_t i = 0; i < WATCHED; i++) {
        if (original[i].sa_handler != SIG_IGN) sigaction(watched[i], &original[i], NULL);
    }
}

int tidemark_lock_cleanup_arm(const char *lock, const char *token, const char *temporary) {
    size_t lock_length = strlen(lock), temporary_length = temporary ? strlen(temporary) : 0;
    size_t length = token ? strlen(token) : 0;
    if (lock_length >= sizeof(lock_path) || temporary_length >= sizeof(temporary_path) || length >= sizeof(lock_token)) {
        return -1;
    }
    pthread_mutex_lock(&installing);
    // One lock at a time: a second would take the first's paths.
    if (lock_held) {
        pthread_mutex_unlock(&installing);
        return -1;
    }
    any_content = token == NULL;
    token_length = length;
    memcpy(lock_path, lock, lock_length + 1);
    memcpy(lock_token, token ? token : "", length + 1);
    if (temporary) memcpy(temporary_path, temporary, temporary_length + 1); else temporary_path[0] = 0;
    lock_held = 1;
    armed = 1;
    install(USE_LOCK);
    pthread_mutex_unlock(&installing);
    return 0;
}

void tidemark_lock_cleanup_disarm(void) {
    pthread_mutex_lock(&installing);
    if (lock_held) {
        lock_held = 0;
        armed = 0;
        uninstall(USE_LOCK);
    }
    pthread_mutex_unlock(&installing);
}

void tidemark_lock_cleanup_any(int any) { any_content = any ? 1 : 0; }

void tidemark_signal_window_open(void) {
    pthread_mutex_lock(&installing);
    window_signal = 0;
    window_open = 1;
    install(USE_WINDOW);
    pthread_mutex_unlock(&installing);
}

void tidemark_signal_window_close(void) {
    pthread_mutex_lock(&installing);
    // A signal sent while no thread could take it (every thread blocking it: the one that
    // unblocks it not yet running) is still pending: it came in the window, and is noted here
    // rather than left to end the process once its default action is back.
    if (window_open) {
        sigset_t pending;
        sigemptyset(&pending);
        sigpending(&pending);
        for (size_t i = 0; i < WATCHED; i++) {
            int number = watched[i];
            if (number == SIGQUIT || !sigismember(&pending, number)) continue;
            sigset_t one, previous;
            sigemptyset(&one);
            sigaddset(&one, number);
            // Taken only blocked: this thread blocks it a moment to take it.
            pthread_sigmask(SIG_BLOCK, &one, &previous);
            struct timespec none = {0, 0};
            if (sigtimedwait(&one, NULL, &none) == number && !window_signal) window_signal = number;
            pthread_sigmask(SIG_SETMASK, &previous, NULL);
        }
    }
    window_open = 0;
    uninstall(USE_WINDOW);
    pthread_mutex_unlock(&installing);
}

int tidemark_signal_window_received(void) { return window_signal; }
