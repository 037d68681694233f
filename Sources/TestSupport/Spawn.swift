import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, its standard output and error going to files.
///
/// Tests start processes with this instead of Foundation's `Process`: on Linux, `Process.run()`
/// copies whole `readdir` entries of `/proc/self/fd` and intermittently reads past glibc's buffer
/// (swift-corelibs-foundation#5472, not in this toolchain). That crashed one CI run of this suite,
/// which starts hundreds of processes while the fixture servers hold many descriptors.
public final class SpawnedProcess: @unchecked Sendable {
    /// How a child ended.
    public struct Exit: Sendable {
        /// The exit status, or the signal's number when `signalled`.
        public var status: Int32
        /// True when a signal ended it.
        public var signalled: Bool
    }

    public let pid: pid_t
    private let condition = NSCondition()
    private var exit: Exit?

    /// Starts `executable` with `arguments` in `directory` (through `env -C`), with exactly
    /// `environment`, standard input from /dev/null, and output to the files `stdout` and `stderr`.
    /// A thread of its own reaps the child as soon as it ends, as `Process` does.
    public init(_ executable: String, _ arguments: [String], in directory: String,
                environment: [String: String], stdout: String, stderr: String) throws {
        let argv = ["/usr/bin/env", "-C", directory, executable] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        SpawnedProcess.closeInheritedDescriptors(&actions)
        // Started as a shell starts a command: no signal blocked, the usual ones at their default
        // action. The thread spawning it may be one of libdispatch's, which block every signal,
        // and a child inheriting that mask never saw a SIGTERM a test sent (its handler did not run).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let rc = withCStringArray(argv) { cArgv in
            withCStringArray(envp) { cEnvp in posix_spawn(&pid, argv[0], &actions, &attributes, cArgv, cEnvp) }
        }
        guard rc == 0 else {
            struct SpawnFailed: Error, CustomStringConvertible { let description: String }
            throw SpawnFailed(description: "posix_spawn \(executable): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        let child = pid
        Thread { [self] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            let ended = (status & 0x7f) == 0
                ? Exit(status: (status >> 8) & 0xff, signalled: false)
                : Exit(status: status & 0x7f, signalled: true)
            condition.lock()
            exit = ended
            condition.broadcast()
            condition.unlock()
        }.start()
    }

    /// Has the child close every descriptor above standard error: tests open files without
    /// `O_CLOEXEC` (`Data.write` does), and a child spawned meanwhile by another test held such a
    /// file open until it ended, whose close was an inotify event long after the write (a
    /// watcher's idle sync then saw one more change). glibc's
    /// `posix_spawn_file_actions_addclosefrom_np` (2.34), looked up at run time: Swift's Glibc
    /// module leaves it out (it is behind _GNU_SOURCE).
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
    }

    /// Waits (blocking the calling thread) for the child to end.
    public func wait() -> Exit {
        condition.lock()
        defer { condition.unlock() }
        while exit == nil { condition.wait() }
        return exit!
    }

    /// Waits for the child to end on a thread of its own, so no task-pool thread is blocked.
    public func exited() async -> Exit {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.wait()) }.start()
        }
    }

    /// True while the child has not been reaped.
    public var isRunning: Bool { condition.withLock { exit == nil } }

    /// Sends `signal` unless the child was already reaped; true when it was sent.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        condition.withLock { exit == nil && Glibc.kill(pid, signal) == 0 }
    }
}

/// Runs `body` with a NULL-terminated array of C strings.
private func withCStringArray<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
    defer { copies.forEach { free($0) } }
    return body(copies)
}
