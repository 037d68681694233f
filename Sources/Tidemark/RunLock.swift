import Foundation

/// The mirror's run lock: `.git/tidemark.lock`, held with `flock(2)` so the kernel releases it
/// when the process dies, and holding the owner's pid for the message a second run prints. The
/// watcher's `.git/tidemark/watch.lock` is one too (``init(path:)``).
final class RunLock {
    private let descriptor: Int32
    let path: String
    /// When the run before this one took the lock, if that run never released it (it was killed,
    /// or crashed): a lock released in order is left empty.
    let abandonedRunStart: timespec?
    /// Runs when the lock is released, before it is: work the run holding it leaves to its end.
    var onRelease: (() -> Void)?

    /// The pid of another process that holds the lock now, read without taking it (a killed
    /// run's pid, left in the file, names no living process); nil when there is none.
    static func livingHolder(gitDirectory: String) -> Int32? {
        livingHolder(of: gitDirectory + "tidemark.lock")
    }

    /// The pid of another process that holds the lock file at `path` now (see above); this
    /// process's own too with `includingOwn`.
    ///
    /// A lock file copied with its mirror (`cp -a`, a backup restored) names the pid of the
    /// process holding the original, which holds nothing here: the holder notes the file's inode
    /// beside its pid, and a file whose inode differs is held by none (`watch --stop` in a copy
    /// stopped the original's watcher).
    static func livingHolder(of path: String, includingOwn: Bool = false) -> Int32? {
        var info = stat()
        guard let data = FileManager.default.contents(atPath: path),
              let pid = pid(in: data), pid > 0, includingOwn || pid != getpid() else { return nil }
        if let inode = inode(in: data), lstat(path, &info) != 0 || UInt64(info.st_ino) != inode { return nil }
        return isLiving(pid) ? pid : nil
    }

    /// Whether `pid` names a living process (one of another user's too).
    /// A zombie (dead, its parent not having reaped it) is not: a run killed under `timeout -s
    /// KILL` is orphaned, and a container whose first process reaps no orphans keeps it a zombie
    /// for good, holding its pid (its locks and temporaries then stayed for good).
    static func isLiving(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        // `/proc/<pid>/stat`: `pid (name) state ...`; the name may hold spaces and parentheses.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        let state = stat[stat.index(after: close)...].drop(while: { $0 == " " }).first
        return state != "Z" && state != "X"
    }

    /// The pid a lock file holds (its first word: digits); nil for an empty or unreadable one.
    private static func pid(in bytes: some Collection<UInt8>) -> Int32? {
        words(bytes).first.flatMap { Int32($0) }
    }

    /// The inode a lock file's holder noted after its pid; nil when it noted none.
    private static func inode(in bytes: some Collection<UInt8>) -> UInt64? {
        let words = words(bytes)
        return words.count > 1 ? UInt64(words[1]) : nil
    }

    private static func words(_ bytes: some Collection<UInt8>) -> [Substring] {
        String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
    }

    /// Takes the lock at once or throws ``MirrorError/locked(pid:path:)``.
    convenience init(gitDirectory: String) throws(MirrorError) {
        try self.init(path: gitDirectory + "tidemark.lock")
    }

    /// Takes the lock file at `path` at once or throws ``MirrorError/locked(pid:path:)``.
    init(path: String) throws(MirrorError) {
        self.path = path
        // Never through a symbolic link (one planted in `.git`, a mirror unpacked from an archive):
        // the lock is written and emptied, which would empty the file it leads to.
        // A lock another member of a shared mirror's group created, which this user may not
        // write, still locks: `flock` needs no write access (the holder's pid is then not noted).
        // Not in a folder this user cannot write to: the run could write nothing there.
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o666)
        if fd < 0, errno == EACCES {
            if access((path as NSString).deletingLastPathComponent, W_OK) == 0 {
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            } else {
                errno = EACCES  // what the open found; access() may have set another
            }
        }
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            let reason = fd >= 0 ? EINVAL : errno
            if fd >= 0 { close(fd) }
            if reason == ELOOP || reason == EINVAL {
                throw .invalidArgument("lock file '\(path)' is \(reason == ELOOP ? "a symbolic link" : "not a regular file"), "
                                       + "which tidemark does not write through: remove it (no tidemark run holds it then)")
            }
            let hint = reason == EACCES || reason == EROFS
                ? " (the mirror is read-only to you: status, diff, log, config and sync --dry-run only read it)" : ""
            throw .invalidArgument("cannot open lock file '\(path)': \(String(cString: strerror(reason)))" + hint)
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, 31, 0)
            close(fd)
            let pid = count > 0 ? RunLock.pid(in: buffer[0..<count]) : nil
            throw .locked(pid: pid, path: path)
        }
        descriptor = fd
        abandonedRunStart = info.st_size > 0 ? info.st_mtim : nil
        let text = Array("\(getpid()) \(info.st_ino)\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.count, 0)
    }

    deinit {
        onRelease?()
        _ = ftruncate(descriptor, 0)
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
