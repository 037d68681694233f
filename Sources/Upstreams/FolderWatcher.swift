#if os(Linux)
import Foundation
import Glibc

/// Watches a `dir` upstream folder with inotify and tells, over a Unix socket, which item file
/// names changed since a token: a listing then checks those alone instead of taking an `lstat` of
/// every file, as git's fsmonitor daemon spares `git status` its scan of the working tree.
///
/// - It watches the folder and each subfolder a listing reads (not hidden ones; mirrors only for
///   their markers), and keeps which folders hold each `*.json` name. A listing checks a changed
///   name in every folder that holds it, so an id in two shards is still an error and a file
///   moved between shards is not a deletion.
/// - A token is `<instance>:<sequence>`. A token of another instance (a restarted watcher), or
///   one from before a lost event, is answered `rescan`, and the listing scans every file as it
///   does without a watcher. Events are lost when inotify's queue overflows (the folders are then
///   read again), when a folder is created, removed, renamed or changes mode (its files were not
///   watched a moment, or may not be readable), or when a mirror is made or removed inside. A
///   folder that cannot be watched stops the watcher.
/// - A request is answered after reading every queued event. The kernel queues an event before
///   the call that caused it returns, so all that changed before the request is in the answer.
/// - Symbolic links are answered as changed every time: what changes is their target.
/// - Not seen: writes through a memory map, and writes through a hard link under another name.
///   The fetch scans in full at least hourly (``FolderChanges/fullScanInterval``).
public final class FolderWatcher: @unchecked Sendable {  // used by one thread at a time
    /// The watched folder (real path).
    public let root: String
    private let rootBytes: [UInt8]
    /// The root's device and inode (``FolderChanges/identity(of:)``): a folder put in its place
    /// under the same path is another folder.
    private let rootIdentity: String
    /// The root's device: a subfolder on another one is a mount.
    private let rootDevice: dev_t
    private let inotify: Int32
    private let instance: String
    /// Events read so far; a token names how many its answer covered.
    private var sequence: UInt64 = 0
    /// Tokens below this sequence are answered `rescan`.
    private var validFrom: UInt64 = 0
    /// Each watched folder's path relative to the root (empty for the root), by folder number
    /// (numbers are not reused: a late event of a folder gone finds none).
    private var folderPaths: [Int: [UInt8]] = [:]
    private var nextFolder = 0
    private var folderOfWatch: [Int32: Int] = [:]
    private var watchOfFolder: [Int: Int32] = [:]
    /// The folders holding each `*.json` name (not folders named so), and those where it is a link.
    private var holders: [[UInt8]: [Int]] = [:]
    /// How many names each folder holds in `holders`.
    private var namesHeld: [Int: Int] = [:]
    private var links: [[UInt8]: [Int]] = [:]
    /// Folders that are mirrors: watched for their `.git` and `.tidemark` alone.
    private var mirrors = Set<Int>()
    /// The sequence of each name's last event.
    private var changed: [[UInt8]: UInt64] = [:]
    /// Why the watcher must stop (its folder was removed or moved away), once it must.
    public private(set) var failure: String?
    /// Why events were last lost, for the log.
    public private(set) var lastLoss: String?

    /// What inotify reports for each folder: any change of an entry's content, metadata or name,
    /// and the folder's own removal or move.
    private static let mask = UInt32(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM
                                     | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) | inDontFollow

    /// IN_DONTFOLLOW, which Glibc's module leaves out (it is behind _GNU_SOURCE).
    private static let inDontFollow: UInt32 = 0x0200_0000

    /// Watches `root` and every subfolder a listing reads, and reads their names.
    public init(root: String) throws {
        self.root = DirectoryUpstream.realPath(URL(fileURLWithPath: root).standardizedFileURL.path)
        rootBytes = Array(self.root.utf8)
        rootIdentity = FolderChanges.identity(of: self.root) ?? "-"
        var info = stat()
        rootDevice = stat(self.root, &info) == 0 ? info.st_dev : 0
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else {
            throw UpstreamError.unreachable("cannot start inotify: \(String(cString: strerror(errno)))")
        }
        var random = SystemRandomNumberGenerator()
        instance = String(random.next() as UInt64, radix: 16)
        if let remote = Self.networkFileSystem(self.root) {
            throw UpstreamError.unreachable(
                "the upstream folder '\(CQuoting.quoted(self.root))' is on a \(remote) file system, where inotify does not see changes made "
                + "from other machines; fetch and sync scan it instead")
        }
        watch([])
        // A folder that cannot be watched (the watch limit) leaves the watcher useless: say so now.
        if let failure { throw UpstreamError.unreachable(failure) }
        if watchOfFolder.isEmpty { throw UpstreamError.unreachable("cannot watch '\(CQuoting.quoted(root))': \(lastLoss ?? "")") }
    }

    deinit { close(inotify) }

    /// The network or user-space file system `path` (a real path) is on, nil for a local one: there
    /// inotify sees only the changes made through this machine's kernel. Read from
    /// `/proc/self/mounts`: the mount with the longest mount point holding `path`.
    static func networkFileSystem(_ path: String, mounts: String? = nil) -> String? {
        guard let table = mounts ?? (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) else { return nil }
        var best: (point: String, type: String)?
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = unescapeMountField(String(fields[1]))
            guard path == point || path.hasPrefix(point == "/" ? "/" : point + "/"), point.count >= (best?.point.count ?? 0) else { continue }
            best = (point, String(fields[2]))
        }
        guard let type = best?.type else { return nil }
        let remote = ["nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs", "glusterfs", "lustre", "gpfs", "virtiofs",
                      "vboxsf", "davfs", "sshfs"]
        return remote.contains(type) || type.hasPrefix("fuse") ? type : nil
    }

    /// A mount table field with its octal escapes (`\040` for a space) undone.
    private static func unescapeMountField(_ field: String) -> String {
        guard field.contains("\\") else { return field }
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let first = rest.first {
            if first == 92, rest.count >= 4, let value = UInt8(String(decoding: rest.dropFirst().prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                rest = rest.dropFirst(4)
            } else {
                bytes.append(first)
                rest = rest.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Folders watched now.
    public var folderCount: Int { watchOfFolder.count }
    /// `*.json` names in them (a name in two folders counts twice).
    public var itemFileCount: Int { holders.values.reduce(0) { $0 + $1.count } }

    // MARK: - Serving

    /// Listens on a Unix socket at `socket` (owner only), calls `ready`, then answers requests and
    /// reads events as they come, until `stop` (a pipe's read end) is readable, or throws once
    /// the folder goes away (or `configured`, the path it was given as, leads elsewhere) or its
    /// socket does (the mirror was removed, or another watcher took the path). The socket file
    /// is removed on return, when it is still this watcher's.
    public func serve(at socket: String, stop: Int32, configured: String? = nil, ready: () -> Void) throws {
        let (listener, socketInode) = try UnixSocket.listen(at: socket)
        func isOurs() -> Bool {
            var info = stat()
            return lstat(socket, &info) == 0 && info.st_ino == socketInode
        }
        defer {
            if isOurs() { unlink(socket) }
            close(listener)
        }
        ready()
        var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        var checked = Date()
        while true {
            if let failure { throw UpstreamError.unreachable(failure) }
            guard poll(&fds, nfds_t(fds.count), 5_000) >= 0 else {
                if errno == EINTR { continue }
                throw UpstreamError.unreachable("watcher: poll failed: \(String(cString: strerror(errno)))")
            }
            if checked.timeIntervalSinceNow < -5 {
                checked = Date()
                guard isOurs() else {
                    throw UpstreamError.unreachable("the socket '\(CQuoting.quoted(socket))' was removed or replaced; the watcher stopped")
                }
                // A folder above it renamed moves the watched folder away without an event, and
                // a link on the way (the upstream as configured) may lead elsewhere now.
                guard FolderChanges.identity(of: root) == rootIdentity,
                      configured.map({ DirectoryUpstream.realPath($0) == root }) ?? true else {
                    throw UpstreamError.unreachable("the upstream folder '\(CQuoting.quoted(root))' was moved or replaced; the watcher stopped")
                }
            }
            if fds[2].revents != 0 { return }
            if fds[0].revents != 0 { drain() }
            if fds[1].revents != 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                    answer(client)
                    close(client)
                }
            }
        }
    }

    /// Reads one request (`since <token>` or `since -`, a line) and writes the answer; a client
    /// that has not sent its line within a second is dropped.
    private func answer(_ client: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(1)
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while !request.contains(10), request.count < 256 {
            var wait = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            guard left > 0, poll(&wait, 1, left) > 0 else { return }
            let count = read(client, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            request += buffer[..<count]
        }
        guard let line = request.split(separator: 10).first, line.starts(with: "since ".utf8) else { return }
        let token = String(decoding: line.dropFirst(6), as: UTF8.self)
        let reply = answer(since: token == "-" ? nil : token)
        var sent = 0
        while sent < reply.count {
            // Not `write`: a client gone (a fetch interrupted) would end the watcher with SIGPIPE.
            let count = reply[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// The answer to a request with `token`, after reading every queued event (see
    /// ``FolderChanges`` for its form).
    func answer(since token: String?) -> [UInt8] {
        drain()
        // Names change without bound (new names every day); past four per name held, the record
        // starts over, and the next fetch scans once.
        if changed.count > 4 * max(holders.count, 16_384) {
            lose("the record of changed names was compacted")
            changed = [:]
        }
        var reply = Array("\(FolderChanges.magic)\0".utf8) + rootBytes + [0] + Array("\(rootIdentity)\0\(instance):\(sequence)\0".utf8)
        guard failure == nil, let token, let since = since(token) else {
            let why = failure ?? (token == nil ? "the first fetch with a watcher"
                : token?.hasPrefix(instance + ":") == false ? "it started after the last fetch" : lastLoss ?? "events were lost")
            return reply + Array("rescan\0".utf8) + Array(why.utf8.filter { $0 != 0 }) + [0]
        }
        var names = Set(links.keys)
        for (name, at) in changed where at > since { names.insert(name) }
        reply += Array("changes\0\(names.count)\0".utf8)
        for name in names {
            let folders = (holders[name] ?? []).compactMap { folderPaths[$0] }
            reply += name + [0] + Array("\(folders.count)\0".utf8)
            for folder in folders { reply += folder + [0] }
        }
        return reply + Array("end\0".utf8)
    }

    /// The sequence a token of this instance names, nil when it is not one or is older than a loss.
    private func since(_ token: String) -> UInt64? {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == instance, let value = UInt64(parts[1]), value >= validFrom, value <= sequence else {
            return nil
        }
        return value
    }

    // MARK: - Events

    /// Reads and applies every queued event.
    func drain() {
        let size = 64 << 10
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let count = read(inotify, buffer, size)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = (buffer + offset).loadUnaligned(as: inotify_event.self)
                let nameStart = buffer + offset + MemoryLayout<inotify_event>.size
                let nameBytes = UnsafeBufferPointer(start: nameStart.assumingMemoryBound(to: UInt8.self), count: Int(event.len))
                let name = Array(nameBytes.prefix { $0 != 0 })
                apply(watch: event.wd, mask: event.mask, name: name)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
    }

    private func apply(watch wd: Int32, mask: UInt32, name: [UInt8]) {
        sequence += 1
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            // Which events were dropped is unknown: the folders are read again.
            lose("inotify's event queue overflowed")
            return rewatch()
        }
        guard let folder = folderOfWatch[wd], let path = folderPaths[folder] else { return }
        if mask & UInt32(IN_IGNORED) != 0 {
            folderOfWatch[wd] = nil
            if watchOfFolder[folder] == wd { watchOfFolder[folder] = nil }
            return
        }
        if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
            // A subfolder's parent reports where it went; the root has no watched parent.
            if path.isEmpty { stop("the upstream folder '\(CQuoting.quoted(root))' was removed or moved") }
            return
        }
        guard !name.isEmpty else {
            // The folder's own mode or times: a folder made unreadable must fail the listing as a scan fails.
            if mask & UInt32(IN_ATTRIB) != 0 { lose("folder '\(CQuoting.quoted(path))' changed its attributes") }
            return
        }
        if name == Array(".git".utf8) || name == Array(".tidemark".utf8) {
            // A folder became a mirror (a clone inside the upstream folder), whose files a listing
            // skips, or stopped being one: the folders are read again.
            lose("a mirror was made or removed in '\(CQuoting.quoted(path))'")
            return rewatch()
        }
        guard !mirrors.contains(folder) else { return }  // a mirror's own files are not listed
        let child = path.isEmpty ? name : path + [47] + name
        if mask & UInt32(IN_ISDIR) != 0 {
            guard name.first != 46 else { return }  // hidden: not listed
            if mask & UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) != 0 {
                // Whatever the event says, the folder is read again if it is there now: two
                // folders swapped (`mv --exchange`) each leave and arrive, in that order.
                lose("folder '\(CQuoting.quoted(child))' was created, removed or renamed")
                unwatch(child)
                var info = stat()
                if withPath(rootBytes + [47] + child, { fstatat(AT_FDCWD, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0,
                   info.st_mode & S_IFMT == S_IFDIR {
                    watch(child)
                }
            } else {
                // Its mode or times (`chmod`, `touch`, `cp -a`): it stays watched, but a folder
                // made unreadable must fail the listing as a scan fails.
                lose("folder '\(CQuoting.quoted(child))' changed its attributes")
            }
            return
        }
        guard DirectoryUpstream.isItemName(name) else { return }
        changed[name] = sequence
        guard mask & UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) != 0 else { return }
        // The name's entry as it is now, whatever the event says: two files swapped
        // (`mv --exchange`) each leave and arrive, in that order, and both are still there.
        var info = stat()
        let exists = withPath(rootBytes + [47] + child) { fstatat(AT_FDCWD, $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
        let kind = exists ? info.st_mode & S_IFMT : 0
        if holders[name]?.contains(folder) == true {
            holders[name]?.removeAll { $0 == folder }
            namesHeld[folder, default: 1] -= 1
        }
        links[name]?.removeAll { $0 == folder }
        // A folder by that name now: its own event follows.
        if exists, kind != S_IFDIR {
            holders[name, default: []].append(folder)
            namesHeld[folder, default: 0] += 1
        }
        if exists, kind == S_IFLNK { links[name, default: []].append(folder) }
        if holders[name]?.isEmpty == true { holders[name] = nil }
        if links[name]?.isEmpty == true { links[name] = nil }
    }

    /// Makes every token from before this event need a rescan; the answer that reads this event
    /// gives a token after it.
    private func lose(_ why: String) {
        validFrom = sequence
        lastLoss = why
    }

    /// Stops the watcher: no answer stands in for a scan any more.
    private func stop(_ why: String) {
        lose(why)
        if failure == nil { failure = why + "; the watcher stopped" }
    }

    // MARK: - Folders

    /// Forgets every folder and name and reads them all again, from a fresh set of watches.
    private func rewatch() {
        for wd in watchOfFolder.values { inotify_rm_watch(inotify, wd) }
        folderPaths = [:]
        namesHeld = [:]
        folderOfWatch = [:]
        watchOfFolder = [:]
        holders = [:]
        links = [:]
        mirrors = []
        watch([])
    }

    /// Watches the folder at `relative` and, depth first, each subfolder a listing reads; indexes
    /// their `*.json` names. The watch comes before the read, so nothing created in between is
    /// missed. A mirror is watched for its `.git` and `.tidemark` alone.
    private func watch(_ relative: [UInt8]) {
        let full = relative.isEmpty ? rootBytes : rootBytes + [47] + relative
        let wd = withPath(full) { inotify_add_watch(inotify, $0, Self.mask) }
        guard wd >= 0 else {
            // Gone already: its parent's event said so. Anything else leaves a folder unwatched.
            if errno == ENOENT || errno == ENOTDIR { return lose("folder '\(CQuoting.quoted(full))' went away") }
            let reason = errno == ENOSPC
                ? "the inotify watch limit is reached (raise it: sysctl fs.inotify.max_user_watches=1048576)"
                : String(cString: strerror(errno))
            return stop("cannot watch '\(CQuoting.quoted(full))': \(reason)")
        }
        let folder = nextFolder
        nextFolder += 1
        folderPaths[folder] = relative
        folderOfWatch[wd] = folder
        watchOfFolder[folder] = wd
        if !relative.isEmpty, let remote = mountedRemote(full) {
            return stop("'\(CQuoting.quoted(full))' is a \(remote) file system mounted inside the folder, where inotify does not "
                        + "see changes made from elsewhere")
        }
        if !relative.isEmpty, isMirror(relative) {
            mirrors.insert(folder)
            return
        }
        guard let dir = withPath(full, { opendir($0) }) else {
            if errno == ENOENT || errno == ENOTDIR { return lose("folder '\(CQuoting.quoted(full))' went away") }
            return stop("cannot read '\(CQuoting.quoted(full))': \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        let fd = dirfd(dir)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var subfolders: [[UInt8]] = []
        while let entry = readdir(dir) {
            let cName = (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: UInt8.self)
            let name = Array(UnsafeBufferPointer(start: cName, count: strlen(UnsafeRawPointer(cName).assumingMemoryBound(to: CChar.self))))
            if name == [46] || name == [46, 46] { continue }
            var type = entry.pointee.d_type
            if type == UInt8(DT_UNKNOWN) {
                var info = stat()
                guard (name + [0]).withUnsafeBufferPointer({
                    fstatat(fd, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), &info, AT_SYMLINK_NOFOLLOW)
                }) == 0 else { continue }
                let kind = info.st_mode & S_IFMT
                type = UInt8(kind == S_IFDIR ? DT_DIR : kind == S_IFLNK ? DT_LNK : DT_REG)
            }
            if type == UInt8(DT_DIR) {
                if name.first != 46 { subfolders.append(relative.isEmpty ? name : relative + [47] + name) }
            } else if DirectoryUpstream.isItemName(name) {
                holders[name, default: []].append(folder)
                namesHeld[folder, default: 0] += 1
                if type == UInt8(DT_LNK) { links[name, default: []].append(folder) }
            }
        }
        for subfolder in subfolders { watch(subfolder) }
    }

    /// Stops watching the folder at `relative` and those below it, and forgets their names.
    private func unwatch(_ relative: [UInt8]) {
        // Only the folders watched now: the cost of a folder event does not grow with all those
        // ever watched (a tool making and removing temporary folders all day).
        let gone = Set(folderPaths.compactMap { folder, path in
            path == relative || path.starts(with: relative + [47]) ? folder : nil
        })
        for folder in gone {
            folderPaths[folder] = nil
            mirrors.remove(folder)
            if let wd = watchOfFolder.removeValue(forKey: folder) {
                inotify_rm_watch(inotify, wd)
                folderOfWatch[wd] = nil
            }
        }
        // Names are forgotten only when the folders held some (a pass over every name).
        var heldAny = false
        for folder in gone where (namesHeld.removeValue(forKey: folder) ?? 0) > 0 { heldAny = true }
        guard heldAny else { return }
        func forgetting(_ map: [[UInt8]: [Int]]) -> [[UInt8]: [Int]] {
            map.compactMapValues { folders in
                let kept = folders.filter { !gone.contains($0) }
                return kept.isEmpty ? nil : kept
            }
        }
        holders = forgetting(holders)
        links = forgetting(links)
    }

    /// The kind of network or FUSE file system mounted at the folder `full`, when it is on another
    /// device than the root (one `stat` per folder; the mount table is read only then).
    private func mountedRemote(_ full: [UInt8]) -> String? {
        var info = stat()
        guard withPath(full, { stat($0, &info) }) == 0, info.st_dev != rootDevice else { return nil }
        return Self.networkFileSystem(String(decoding: full, as: UTF8.self))
    }

    /// True when the folder at `relative` is a mirror (holds `.git` and `.tidemark`).
    private func isMirror(_ relative: [UInt8]) -> Bool {
        (rootBytes + [47] + relative).withUnsafeBufferPointer { DirectoryUpstream.isMirror(AT_FDCWD, $0) }
    }

    private func withPath<T>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
        (path + [0]).withUnsafeBufferPointer { body(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) }
    }
}
#endif
