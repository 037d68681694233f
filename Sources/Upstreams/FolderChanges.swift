import Foundation

/// What a ``FolderWatcher`` answered: the `*.json` names that changed in the upstream folder since
/// a token, each with the folders that hold it now; or that the folder must be scanned in full.
///
/// On the socket, a request is the line `since <token>` (`since -` without one). The answer is
/// NUL-separated fields: `tidemark-watch 1`, the watched folder, its `<device>:<inode>`, the next
/// token, then `rescan` and why,
/// or `changes`, a count, and for each name the name, the number of folders holding it and their
/// paths (relative to the watched folder, empty for the folder itself), then `end`. Names are
/// bytes as the file system has them.
public struct FolderChanges: Sendable, Equatable {
    static let magic = "tidemark-watch 1"
    /// A fetch scans every file when its last full scan is older than this (seconds), watcher or
    /// not, as Syncthing rescans hourly beside its watcher: it catches what inotify cannot see.
    public static let fullScanInterval: TimeInterval = 3600

    /// A changed name and the folders that hold it now.
    public struct Name: Sendable, Equatable {
        public let name: [UInt8]
        public let folders: [[UInt8]]
    }

    /// The watched folder (real path), and its device and inode as the watcher started.
    public let root: String
    public let rootIdentity: String
    /// The token to ask with next time, once the changes of this answer are stored.
    public let token: String
    /// The names changed since the token asked with; nil when everything must be scanned.
    public let names: [Name]?
    /// Why everything must be scanned, as the watcher tells it.
    public var rescanReason: String?

    /// Parses an answer; nil when it is not one.
    init?(answer: [UInt8]) {
        var fields = answer.split(separator: 0, omittingEmptySubsequences: false).makeIterator()
        func text() -> String? { fields.next().map { String(decoding: $0, as: UTF8.self) } }
        guard text() == Self.magic, let root = text(), let identity = text(), let token = text() else { return nil }
        self.root = root
        rootIdentity = identity
        self.token = token
        switch text() {
        case "rescan":
            names = nil
            rescanReason = text()
        case "changes":
            guard let count = text().flatMap(Int.init), count >= 0 else { return nil }
            var names: [Name] = []
            for _ in 0..<count {
                guard let name = fields.next(), let folders = text().flatMap(Int.init), folders >= 0 else { return nil }
                var paths: [[UInt8]] = []
                for _ in 0..<folders {
                    guard let path = fields.next() else { return nil }
                    paths.append(Array(path))
                }
                names.append(Name(name: Array(name), folders: paths))
            }
            guard text() == "end" else { return nil }
            self.names = names
        default:
            return nil
        }
    }

    /// `<device>:<inode>` of the folder at `path`, nil when it cannot be read.
    public static func identity(of path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(info.st_dev):\(info.st_ino)"
    }

    /// True when this answer is about the folder at `path` (real path): the same path, and the
    /// same folder there (not one put in its place, its parent renamed away).
    public func watches(_ path: String) -> Bool {
        root == path && rootIdentity == FolderChanges.identity(of: path)
    }

    /// Asks the watcher listening on the Unix socket `socket` what changed since `token`; throws
    /// a reason when none answers within `timeout` seconds (none runs, or it is stuck): the
    /// listing then scans as it does without one.
    public static func ask(socket path: String, since token: String?, timeout: Int = 2) throws(WatcherUnavailable) -> FolderChanges {
        let fd = try UnixSocket.connect(to: path)
        defer { close(fd) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("since \(token ?? "-")\n".utf8)
        // Not `write`: a watcher gone meanwhile must not end the fetch with SIGPIPE.
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw WatcherUnavailable("the watcher did not take the request: \(String(cString: strerror(errno)))")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw WatcherUnavailable(errno == EAGAIN || errno == EWOULDBLOCK
                    ? "the watcher did not answer within \(timeout) s (is it stopped?)"
                    : "the watcher did not answer: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            answer += buffer[..<count]
        }
        guard let changes = FolderChanges(answer: answer) else { throw WatcherUnavailable("the watcher's answer is garbled") }
        return changes
    }
}

/// Why no watcher answered; the fetch then scans every file.
public struct WatcherUnavailable: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Unix stream sockets at a path of any length: a path longer than `sun_path` holds is reached
/// through `/proc/self/fd/<folder>/<name>`, the folder opened first.
enum UnixSocket {
    /// A connected socket; throws when nothing listens at `path`.
    static func connect(to path: String) throws(WatcherUnavailable) -> Int32 {
        // Non-blocking while it connects: a stopped watcher (Ctrl-Z) whose backlog is full must
        // not hold the fetch.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw WatcherUnavailable("cannot make a socket: \(String(cString: strerror(errno)))") }
        let result = withAddress(of: path) { address, length in Glibc.connect(fd, address, length) }
        guard result == 0 else {
            let reason = errno == ENOENT || errno == ECONNREFUSED ? "no watcher runs"
                : errno == EAGAIN ? "the watcher takes no requests (is it stopped?)" : String(cString: strerror(errno))
            close(fd)
            throw WatcherUnavailable(reason)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// A socket listening at `path` (replacing a file there), readable and writable by its owner
    /// only: the mode is set before it listens, so no one else ever connects. It is bound and
    /// listens under a temporary name renamed to `path`, so a socket found at `path` is ready (a
    /// mirror removed just as its watcher's socket appeared failed the watcher with "cannot listen",
    /// not as a removed mirror).
    static func listen(at path: String) throws(WatcherUnavailable) -> (fd: Int32, inode: UInt) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw WatcherUnavailable("cannot make a socket: \(String(cString: strerror(errno)))") }
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        var info = stat()
        guard withAddress(of: temporary, { address, length in bind(fd, address, length) }) == 0, chmod(temporary, 0o600) == 0,
              Glibc.listen(fd, 16) == 0, lstat(temporary, &info) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            close(fd)
            throw WatcherUnavailable("cannot listen at '\(CQuoting.quoted(path))': \(reason)")
        }
        return (fd, UInt(info.st_ino))
    }

    /// O_PATH, which Glibc's module leaves out (it is behind _GNU_SOURCE).
    private static let oPath: Int32 = 0o10_000_000

    private static func withAddress(of path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var folder: Int32 = -1
        defer { if folder >= 0 { close(folder) } }
        var target = path
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        if target.utf8.count >= capacity {
            let parent = (path as NSString).deletingLastPathComponent
            folder = open(parent.isEmpty ? "." : parent, oPath | O_DIRECTORY | O_CLOEXEC)
            guard folder >= 0 else { return -1 }
            target = "/proc/self/fd/\(folder)/" + (path as NSString).lastPathComponent
        }
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(target.utf8)
        guard bytes.count < capacity else {
            errno = ENAMETOOLONG
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
