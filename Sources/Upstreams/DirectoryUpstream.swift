import Foundation
import Synchronization

/// The `dir` upstream: a local folder of JSON files, one item per `*.json` file.
///
/// - The id is the file name without `.json`; files may sit in subfolders (shards), but ids must
///   be unique across them.
/// - The version is the item's `lastModified` string field when present, else the file's
///   modification time in UTC.
/// - The ETag is a stat signature (size, modification time, inode), like a web server's. A file
///   whose signature matches the cached one is not read again.
///
/// Messages name files and ids quoted like git quotes paths (`CQuoting`), so no control
/// character of a file name reaches a terminal.
///
/// Without `--collection` (or with `--collection items` alone), the folder itself is the single
/// collection `items`, whatever it holds: a subfolder named `items` is a shard like any other, so
/// creating one never turns the files beside it into deletions. With other collections, each is
/// the subfolder of that name.
public struct DirectoryUpstream: Upstream {
    public let spec: String
    public let collections: [String]
    private let root: URL
    /// Bytes of bodies a listing carries at most; the rest are read again when fetched.
    static let bodyBudget = 32 << 20

    public init(_ configuration: UpstreamConfiguration) throws {
        let location = configuration.location
        guard !location.isEmpty else {
            throw UpstreamError.invalidConfiguration("dir upstream needs a folder: dir:<folder>")
        }
        let url = URL(fileURLWithPath: location).standardizedFileURL
        var info = stat()
        let found = stat(url.path, &info) == 0
        guard found, info.st_mode & S_IFMT == S_IFDIR else {
            // A folder this user may not reach is named so, not as missing.
            if !found, errno == EACCES || errno == ELOOP || errno == ENAMETOOLONG {
                throw UpstreamError.unreachable("upstream folder '\(CQuoting.quoted(url.path))' cannot be reached: \(String(cString: strerror(errno)))")
            }
            throw UpstreamError.unreachable("upstream folder '\(CQuoting.quoted(url.path))' does not exist or is not a folder")
        }
        self.root = url
        self.spec = "dir:" + url.path
        self.collections = configuration.collections.isEmpty ? ["items"] : configuration.collections
    }

    /// The folder listed for `collection`, decided by the collections alone, never by what the
    /// folder holds: a listing cannot switch layouts between two runs.
    private func folder(for collection: String) -> URL {
        collections == ["items"] ? root : root.appendingPathComponent(collection, isDirectory: true)
    }

    /// The upstream folder, links resolved.
    public var folderPath: String { DirectoryUpstream.realPath(root.path) }

    /// True when `path` is the upstream folder or inside it, comparing real paths (links
    /// resolved); `path` need not exist yet. A mirror there would list its own files.
    public func contains(_ path: String) -> Bool {
        let folder = DirectoryUpstream.realPath(root.path)
        let other = DirectoryUpstream.realPath(URL(fileURLWithPath: path).standardizedFileURL.path)
        return other == folder || other.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/")
    }

    /// `path` with links resolved: its deepest existing part's real path, then the rest as given.
    static func realPath(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while true {
            if let resolved = realpath(existing, nil) {
                defer { free(resolved) }
                let head = String(cString: resolved)
                guard !rest.isEmpty else { return head }
                return (head == "/" ? "" : head) + "/" + rest.reversed().joined(separator: "/")
            }
            let parent = (existing as NSString).deletingLastPathComponent
            guard parent != existing, !parent.isEmpty else { return path }
            rest.append((existing as NSString).lastPathComponent)
            existing = parent
        }
    }

    public func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        let base = folder(for: collection)
        let folders = try await DirectoryUpstream.scanInParallel(base.path, within: DirectoryUpstream.realPath(root.path),
                                                                 cached: cached)
        return try DirectoryUpstream.listing(of: folders, collection: collection, cached: try cached.loaded())
    }

    /// The listing of scanned folders: their unchanged items by position, and their other files
    /// read (on all cores) and dated. An id found in two folders throws, naming both files.
    ///
    /// - Parameter readAhead: files already read, by the bytes of their path (not read again;
    ///   not by `String`, whose equality would take `é` and `e` + U+0301 for one path).
    static func listing(of folders: [FolderScan], collection: String, cached: any CachedVersions,
                        readAhead: [[UInt8]: Result<ReadFile, any Error>] = [:]) throws -> Listing {
        var items: [ListedItem] = []
        var unchanged: [Int] = []
        unchanged.reserveCapacity(cached.count)
        // Which folder listed each cached item, and the paths of new ids: a file name may repeat
        // in two shards, and both must be named.
        var listedIn = [Int32](repeating: -1, count: cached.count)
        var newPaths: [ItemID: String] = [:]
        func duplicate(_ id: ItemID, _ other: String, _ path: String) -> UpstreamError {
            DirectoryUpstream.duplicate(id, other, path, collection: collection)
        }
        func claim(_ position: Int?, _ id: @autoclosure () -> ItemID, folder: Int, path: @autoclosure () -> String) throws {
            if let position {
                if listedIn[position] >= 0 {
                    throw duplicate(id(), folders[Int(listedIn[position])].path + "/\(id()).json", path())
                }
                listedIn[position] = Int32(folder)
            } else if let other = newPaths.updateValue(path(), forKey: id()) {
                throw duplicate(id(), other, path())
            }
        }
        var reads = 0
        var carried = 0
        // The files that changed are read and dated on all cores, a chunk at a time (bounded
        // memory), ahead of the loop below, which takes them in order.
        let changed = folders.flatMap(\.files).filter { readAhead[Array($0.path.utf8)] == nil }
        var chunk: [Result<ReadFile, any Error>] = []
        var chunkStart = 0
        var next = 0
        for (folderIndex, folder) in folders.enumerated() {
            for position in folder.unchanged {
                try claim(position, cached.id(at: position), folder: folderIndex,
                          path: folder.path + "/\(cached.id(at: position)).json")
                unchanged.append(position)
            }
            for file in folder.files {
                try claim(file.position, file.id, folder: folderIndex, path: file.path)
                let result: Result<ReadFile, any Error>
                if let early = readAhead[Array(file.path.utf8)] {
                    result = early
                } else {
                    if next == chunkStart + chunk.count {
                        // Interrupted (a signal, a cancelled task): no more files read.
                        if Task.isCancelled { throw CancellationError() }
                        chunkStart = next
                        chunk = read(changed[next..<Self.chunkEnd(changed, from: next)], collection: collection)
                    }
                    result = chunk[next - chunkStart]
                    next += 1
                }
                reads += 1
                guard case .success(let read) = result else {
                    // A file that does not parse fails as its item, as a failed download does: the
                    // rest is stored, and the next fetch tries it again. (Listed at its mtime, with
                    // no body: `fetch` reads it again and names what is wrong.)
                    if case .failure(let error) = result, !Self.isItemError(error) { throw error }
                    items.append(ListedItem(id: file.id, lastModified: file.mtime, etag: StatSignature(file.info).description,
                                            body: nil, location: file.path))
                    continue
                }
                // Carry bodies up to a budget, so a first clone of a large folder stays within bounded memory.
                let carry = carried + read.data.count <= bodyBudget
                if carry { carried += read.data.count }
                items.append(ListedItem(id: file.id, lastModified: read.version, etag: StatSignature(file.info).description,
                                        body: carry ? read.data : nil, location: file.path))
            }
        }
        return Listing(items: items, isComplete: true, unchanged: unchanged, requests: reads)
    }

    /// The error for an id that two files give, naming both.
    static func duplicate(_ id: ItemID, _ path: String, _ other: String, collection: String) -> UpstreamError {
        .duplicateFile(collection: collection, item: "\(CQuoting.quoted(id)) (\(CQuoting.quoted(path)) and \(CQuoting.quoted(other)))")
    }

    /// A changed file's bytes and the version they give.
    struct ReadFile {
        let data: Data
        let version: Timestamp
    }

    /// Files read together on all cores: at most this many, holding at most ``readChunkBytes``
    /// (by the sizes the scan found), and at least one.
    static let readChunk = 1024
    static let readChunkBytes = 32 << 20

    /// Where the chunk of `files` read together from `start` ends.
    static func chunkEnd(_ files: [ListedFile], from start: Int) -> Int {
        var end = start
        var bytes = 0
        while end < files.count, end - start < readChunk {
            bytes += max(0, Int(files[end].info.st_size))
            if bytes > readChunkBytes, end > start { break }
            end += 1
        }
        return end
    }

    /// Reads `files` and dates each (its `lastModified`, else its mtime), on all cores when there
    /// are many; each result in place, an error where the file could not be read or dated.
    static func read(_ files: ArraySlice<ListedFile>, collection: String) -> [Result<ReadFile, any Error>] {
        @Sendable func readOne(_ file: ListedFile) -> Result<ReadFile, any Error> {
            Result {
                let data = try readListedFile(file.path, collection: collection, id: file.id) { $0.st_dev == file.info.st_dev && $0.st_ino == file.info.st_ino }
                return ReadFile(data: data, version: try version(of: data, collection: collection, id: file.id,
                                                                 fallback: file.mtime, path: file.path))
            }
        }
        let files = Array(files)
        guard files.count >= 32 else { return files.map(readOne) }
        let results = UnsafeMutableBufferPointer<Result<ReadFile, any Error>?>.allocate(capacity: files.count)
        results.initialize(repeating: nil)
        defer { results.deinitialize(); results.deallocate() }
        nonisolated(unsafe) let output = results
        DispatchQueue.concurrentPerform(iterations: files.count) { index in output[index] = readOne(files[index]) }
        return results.map { $0! }
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        if let body = item.body { return .body(body, etag: item.etag) }
        guard let path = item.location else {
            throw UpstreamError.unreachable("\(collection)/\(CQuoting.quoted(item.id)): listed without its file")
        }
        // The file listed (its signature is the item's ETag), not whatever took its name since.
        let data = try DirectoryUpstream.readListedFile(path, collection: collection, id: item.id) {
            StatSignature($0).description == item.etag
        }
        do {
            _ = try DirectoryUpstream.version(of: data, collection: collection, id: item.id, fallback: item.lastModified, path: path)
        } catch UpstreamError.malformedItem(_, _, let reason) where DirectoryUpstream.isBeingWritten(path) {
            // Written in place (truncated, then written in pieces) as it was listed and read:
            // the next run reads what the writer leaves. One that stays as it is fails its item.
            throw UpstreamError.goneSinceListed(collection: collection, item: CQuoting.quoted(item.id),
                                                reason: "was being written as it was read (\(reason)); the next fetch reads it again")
        }
        return .body(data, etag: item.etag)
    }

    /// True when the file at `path`, which did not parse, is being written in place: it changed
    /// (its ctime) less than two seconds ago, and changes again within half a second. A file
    /// that stays as it is, however new, is no such file.
    static func isBeingWritten(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        guard Double(now.tv_sec - info.st_ctim.tv_sec) + Double(now.tv_nsec - info.st_ctim.tv_nsec) / 1e9 < 2 else { return false }
        let listed = StatSignature(info)
        for _ in 0..<20 {
            usleep(25_000)
            guard lstat(path, &info) == 0 else { return true }
            if StatSignature(info) != listed { return true }
        }
        return false
    }

    /// The most an item's file may hold: as much as an HTTP upstream's body may (32 MiB).
    static let maxFileBytes = 32 << 20

    /// Reads the file at `path` through one open descriptor, when what that descriptor opened is
    /// a regular file that `isListed` recognises by its `fstat` (the same file the scan found
    /// inside the upstream folder): a file swapped for a link to one outside, or for another
    /// file, between the listing and the read, is not read (the next run lists it again). Such a
    /// file, or one removed since, is ``UpstreamError/goneSinceListed(collection:item:reason:)``.
    /// Files over ``maxFileBytes`` are refused as their item's error.
    static func readListedFile(_ path: String, collection: String, id: ItemID,
                               isListed: (stat) -> Bool) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT {
                throw UpstreamError.goneSinceListed(collection: collection, item: CQuoting.quoted(id),
                                                    reason: "'\(CQuoting.quoted(path))' was removed after it was listed")
            }
            // Its own (its permissions, an I/O error): the other items are stored.
            throw unreadable(path, collection: collection, id: id)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, isListed(info) else {
            throw UpstreamError.goneSinceListed(collection: collection, item: CQuoting.quoted(id),
                                                reason: "'\(CQuoting.quoted(path))' changed after it was listed ("
                                                    + (info.st_mode & S_IFMT == S_IFREG ? "written to, or replaced" : "no longer a file")
                                                    + "); the next fetch lists it again")
        }
        guard Int(info.st_size) <= maxFileBytes else {
            throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(id),
                                              reason: "'\(CQuoting.quoted(path))' holds \(info.st_size) bytes, more than the "
                                                + "\(maxFileBytes >> 20) MiB an item may hold")
        }
        // Room for what the file holds (and one byte to meet its end), not twice as much as
        // appending grows to: a chunk of large files is read at once.
        var data = Data()
        data.reserveCapacity(Int(info.st_size) + 1)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable(path, collection: collection, id: id)
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
            guard data.count <= maxFileBytes else {
                throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(id),
                                                  reason: "'\(CQuoting.quoted(path))' grew past the \(maxFileBytes >> 20) MiB an item may hold")
            }
        }
        // Written to while it was read: what was read may be half of one version and half of another.
        var after = stat()
        if fstat(fd, &after) == 0, StatSignature(after) != StatSignature(info) {
            throw UpstreamError.goneSinceListed(collection: collection, item: CQuoting.quoted(id),
                                                reason: "'\(CQuoting.quoted(path))' was written to while it was being read; "
                                                    + "the next fetch reads it again")
        }
        return data
    }

    /// The error for an item file that cannot be opened or read (`errno` says why): the item's own.
    static func unreadable(_ path: String, collection: String, id: ItemID) -> UpstreamError {
        .malformedItem(collection: collection, item: CQuoting.quoted(id),
                       reason: "cannot read '\(CQuoting.quoted(path))': \(String(cString: strerror(errno)))")
    }

    /// True for the errors of one item (not JSON, a bad `lastModified`; its file removed or
    /// replaced since the folder was read), which the listing leaves to `fetch` to meet again.
    static func isItemError(_ error: any Error) -> Bool {
        switch error {
        case UpstreamError.malformedItem, UpstreamError.goneSinceListed: return true
        default: return false
        }
    }

    /// ``version(of:collection:id:fallback:)`` of the file at `path`, which an error names too:
    /// that is what the user opens to fix it.
    static func version(of data: Data, collection: String, id: ItemID, fallback: Timestamp, path: String) throws -> Timestamp {
        do {
            return try version(of: data, collection: collection, id: id, fallback: fallback)
        } catch UpstreamError.malformedItem(let collection, let item, let reason) {
            throw UpstreamError.malformedItem(collection: collection, item: item, reason: reason + " (in \(CQuoting.quoted(path)))")
        }
    }

    /// The item's version: its `lastModified` field (a date-time or a Unix time), else (none, or `null`) `fallback`.
    static func version(of data: Data, collection: String, id: ItemID, fallback: Timestamp) throws -> Timestamp {
        // The parse the stored form gets (numbers kept as written, a key only once), so a file
        // that passes here is stored as it is.
        let object: JSONObject
        switch Result(catching: { () throws(JSONParseError) in
            try JSONValue.parse(data, maxValues: JSONValue.maxItemValues, duplicateKeys: .reject)
        }) {
        case .success(.object(let members)): object = members
        case .success:
            throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(id), reason: "not a JSON object")
        case .failure(let error):
            throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(id), reason: error.summary)
        }
        // None, or `null` (a tool writing every field): the file's modification time.
        guard let value = object["lastModified"], value != .null else { return fallback }
        guard let text = Timestamp.versionText(of: value) else {
            throw UpstreamError.malformedItem(
                collection: collection, item: CQuoting.quoted(id),
                reason: "field 'lastModified' is \(value.typeName), not a date-time (it takes \(Timestamp.acceptedForms))")
        }
        guard let timestamp = Timestamp(text) else {
            throw UpstreamError.malformedItem(
                collection: collection, item: CQuoting.quoted(id),
                reason: "field 'lastModified' is not a date-time: '\(CQuoting.quoted(text))' (it takes \(Timestamp.acceptedForms))")
        }
        return timestamp
    }

    /// A `*.json` file whose stat signature differs from the cached one (or that is not cached),
    /// with the `lstat` taken while scanning.
    struct ListedFile: Sendable {
        let id: ItemID
        let path: String
        let info: stat
        /// The item's position in the cached versions, nil when it is new.
        let position: Int?

        /// The modification time: the version of a file without a `lastModified` field.
        var mtime: Timestamp { Timestamp(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int32(info.st_mtim.tv_nsec)) }
    }

    /// What scanning one folder found, in name order: the positions of cached items whose stat
    /// signature matches (no read needed), and the other `*.json` files.
    struct FolderScan: Sendable {
        let path: String
        var unchanged: [Int] = []
        var files: [ListedFile] = []
    }

    /// One folder's `*.json` regular files as read, before any comparison: their stems (names
    /// without `.json`, back to back in one buffer) and `lstat` data.
    struct FolderFiles: Sendable {
        let path: String
        var names: [UInt8] = []
        var stems: [Range<Int>] = []
        var infos: [stat] = []
    }

    /// A folder compared with the cached versions, or only read (they were not ready yet).
    enum FolderResult: Sendable {
        case scanned(FolderScan)
        case read(FolderFiles)

        func scan(against cached: any CachedVersions) -> FolderScan {
            switch self {
            case .scanned(let scan): scan
            case .read(let files): DirectoryUpstream.compare(files, with: cached)
            }
        }
    }

    /// Scans `path` and its subfolders, the top folder's subfolders (shards) on all cores at once:
    /// a listing is one `lstat` per file, which the kernel serves in parallel, and the comparison
    /// with the cached signature is made on the same core. Folders read while the cached versions
    /// are still being read (on another thread) are compared once they are ready. Folders come
    /// back in walk order.
    static func scanInParallel(_ path: String, within root: String, cached: some CachedVersions) async throws -> [FolderScan] {
        var subfolders: [String] = []
        let top = try readFolder(path, within: root, subfolders: &subfolders)
        guard !subfolders.isEmpty else { return [compare(top, with: try cached.loaded())] }
        let folders = subfolders
        let workers = max(1, min(folders.count, ProcessInfo.processInfo.activeProcessorCount))
        // Each worker takes the next folder not yet taken, so one slow folder does not hold the others up.
        let next = FolderCounter()
        let scanned = try await withThrowingTaskGroup(of: [(Int, [FolderScan])].self) { group in
            for _ in 0..<workers {
                group.addTask {
                    var done: [(Int, [FolderResult])] = []
                    while case let index = next.value.add(1, ordering: .relaxed).oldValue, index < folders.count {
                        // Interrupted (a signal, a cancelled task): the scan stops.
                        try Task.checkCancellation()
                        done.append((index, try scanTree(folders[index], within: root, cached: cached)))
                    }
                    let versions = try cached.loaded()
                    return done.map { ($0.0, $0.1.map { $0.scan(against: versions) }) }
                }
            }
            var byFolder = [[FolderScan]](repeating: [], count: folders.count)
            for try await part in group {
                for (index, scans) in part { byFolder[index] = scans }
            }
            return byFolder
        }
        return [compare(top, with: try cached.loaded())] + scanned.joined()
    }

    /// Scans `path` and, depth first, every subfolder below it; compares each folder at once when
    /// the cached versions are ready.
    static func scanTree(_ path: String, within root: String, cached: some CachedVersions) throws -> [FolderResult] {
        var subfolders: [String] = []
        let files = try readFolder(path, within: root, subfolders: &subfolders)
        var results: [FolderResult] = [cached.isReady ? .scanned(compare(files, with: try cached.loaded())) : .read(files)]
        for folder in subfolders { results += try scanTree(folder, within: root, cached: cached) }
        return results
    }

    /// Reads one folder: `*.json` regular files, with one `lstat` each taken relative to the open
    /// folder, so the kernel does not walk the path, and `*.json` symbolic links to files inside
    /// `root` (``followLink(_:within:)``). Subfolders (not hidden ones, not mirrors, not links)
    /// are appended to `subfolders`, in name order. Only these names, which become
    /// ids and paths, must be UTF-8; any other entry is ignored, whatever its name.
    static func readFolder(_ path: String, within root: String, subfolders: inout [String]) throws -> FolderFiles {
        guard let dir = opendir(path) else {
            throw UpstreamError.unreachable("cannot read upstream folder '\(CQuoting.quoted(path))': \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        let fd = dirfd(dir)
        // Names go into one buffer, NUL-terminated (so `fstatat` takes them as they are): no array
        // or String per file.
        var files = FolderFiles(path: path)
        var ranges: [Range<Int>] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            // The name is read in place, up to its NUL: an entry is only as long as its name, so
            // copying the whole `d_name` array could read past the end of readdir's buffer.
            let cName = (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: UInt8.self)
            let name = UnsafeBufferPointer(start: cName, count: strlen(UnsafeRawPointer(cName).assumingMemoryBound(to: CChar.self)))
            if name.elementsEqual([46]) || name.elementsEqual([46, 46]) { continue }
            ranges.append(files.names.count..<files.names.count + name.count)
            files.names.append(contentsOf: name)
            files.names.append(0)
        }
        let firstSubfolder = subfolders.count
        try files.names.withUnsafeBufferPointer { buffer in
            // In directory order: only what is returned is sorted (unchanged items are positions).
            for range in ranges {
                let name = UnsafeBufferPointer(rebasing: buffer[range])
                switch try entry(name, in: fd, at: path, within: root) {
                case .folder:
                    subfolders.append(path + "/" + String(decoding: name, as: UTF8.self))
                case .item(let info):
                    files.stems.append(range.lowerBound..<range.upperBound - 5)
                    files.infos.append(info)
                case .other:
                    continue
                }
            }
        }
        subfolders[firstSubfolder...].sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return files
    }

    /// What one name of a folder is to a listing.
    enum Entry {
        /// A `*.json` item file, with its `lstat` (a link's: its target's `stat`).
        case item(stat)
        /// A subfolder to list too (not hidden, not a mirror).
        case folder
        /// Anything else, or gone since the folder was read.
        case other
    }

    /// What `name` (NUL-terminated in memory just past its last byte) is in the open folder `fd`
    /// at `path`: one `lstat` relative to the folder, so the kernel does not walk the path. Throws
    /// for what must not pass as a deletion: an unreadable entry, a name that is not UTF-8, a
    /// `*.json` FIFO, socket or device, a link that leads outside `root` or nowhere.
    static func entry(_ name: UnsafeBufferPointer<UInt8>, in fd: Int32, at path: String, within root: String) throws -> Entry {
        var info = stat()
        let cName = UnsafeRawPointer(name.baseAddress!).assumingMemoryBound(to: CChar.self)
        guard fstatat(fd, cName, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            // Removed since the folder was read: gone upstream. Any other failure (a folder
            // that can be listed but not searched, EIO, ESTALE) must not look like a deletion.
            if errno == ENOENT { return .other }
            let reason = String(cString: strerror(errno))
            throw UpstreamError.unreachable(
                "cannot read upstream file '\(CQuoting.quoted(path + "/" + String(decoding: name, as: UTF8.self)))': \(reason)")
        }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFDIR {
            // Hidden folders are not shards, nor is a mirror (a clone made inside the folder).
            guard name.first != 46, !isMirror(fd, name) else { return .other }
            try checkUTF8(name, in: path, what: "a folder")
            return .folder
        }
        guard isItemName(name) else { return .other }
        switch kind {
        case S_IFREG:
            guard !isAppleDouble(fd, name) else { return .other }
            try checkUTF8(name, in: path, what: "an item file")
            return .item(info)
        case S_IFLNK:
            // Emacs's lock of a file being edited (`.#x.json`, a link to `user@host.pid:time`),
            // which leads nowhere: no item.
            guard !name.starts(with: ".#".utf8) else { return .other }
            try checkUTF8(name, in: path, what: "an item file")
            return .item(try followLink(path + "/" + String(decoding: name, as: UTF8.self), within: root))
        default:
            // A FIFO, socket or device named like an item: never read (a FIFO would
            // block), and never skipped either, which would make its item look deleted.
            let what = kind == S_IFIFO ? "a FIFO" : kind == S_IFSOCK ? "a socket" : "a device"
            throw UpstreamError.unreachable("upstream item file '\(CQuoting.quoted(Array(path.utf8) + [UInt8(ascii: "/")] + Array(name)))' "
                                            + "is \(what), not a regular file")
        }
    }

    /// The `stat` of the regular file the `*.json` symbolic link `link` leads to, which must be
    /// inside `root` (the upstream folder, real path): a link to a file elsewhere, to a folder, or
    /// to nothing throws, naming the link, rather than have its item skipped (and, once cached,
    /// taken as deleted upstream). The item's signature is its target's, so editing the target
    /// changes the item.
    static func followLink(_ link: String, within root: String) throws -> stat {
        guard let resolved = realpath(link, nil) else {
            let reason = String(cString: strerror(errno))
            throw UpstreamError.unreachable("upstream item file '\(CQuoting.quoted(link))' is a symbolic link that leads nowhere: \(reason)")
        }
        let target = String(cString: resolved)
        free(resolved)
        guard target == root || target.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            throw UpstreamError.unreachable(
                "upstream item file '\(CQuoting.quoted(link))' is a symbolic link to '\(CQuoting.quoted(target))', outside the "
                + "upstream folder: the dir upstream follows links only to files inside it; copy the file in instead")
        }
        var info = stat()
        guard stat(target, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            throw UpstreamError.unreachable("cannot read upstream file '\(CQuoting.quoted(target))' (linked from '\(CQuoting.quoted(link))'): \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UpstreamError.unreachable("upstream item file '\(CQuoting.quoted(link))' is a symbolic link to '\(CQuoting.quoted(target))', which is not a file")
        }
        return info
    }

    /// Throws when `name`, read in the folder at `path`, is not UTF-8: ids and paths are text, and
    /// an item or shard must not silently go missing. The message quotes the name.
    static func checkUTF8(_ name: UnsafeBufferPointer<UInt8>, in path: String, what: String) throws {
        // All-ASCII names (the usual) are valid UTF-8 without a check of their own.
        guard !name.allSatisfy({ $0 < 0x80 }), String(validating: name, as: UTF8.self) == nil else { return }
        let file = Array(path.utf8) + [UInt8(ascii: "/")] + Array(name)
        throw UpstreamError.unreachable(
            "upstream folder holds \(what) whose name is not UTF-8: \(CQuoting.quoted(file)); rename it (the dir upstream takes UTF-8 names only)")
    }

    /// True when the file `name` of the open folder `fd` is an AppleDouble file: a `._x.json`
    /// that macOS writes beside `x.json` on file systems without resource forks (SMB shares, FAT
    /// and exFAT drives), starting with the bytes 00 05 16 07. It holds Finder metadata, not an
    /// item, and could never parse as JSON; a `._` file that is JSON is an item like any other.
    static func isAppleDouble(_ fd: Int32, _ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.starts(with: "._".utf8) else { return false }
        let file = (Array(name) + [0]).withUnsafeBufferPointer {
            openat(fd, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard file >= 0 else { return false }
        defer { close(file) }
        var magic = [UInt8](repeating: 0, count: 4)
        return pread(file, &magic, 4, 0) == 4 && magic == [0x00, 0x05, 0x16, 0x07]
    }

    /// True for a name a listing takes as an item file: `<id>.json`, the id not empty.
    static func isItemName(_ name: some BidirectionalCollection<UInt8>) -> Bool {
        name.count > 5 && name.suffix(5).elementsEqual(".json".utf8)
    }

    /// True when the subfolder `name` of the open folder `fd` is a mirror: it holds `.git` and
    /// `.tidemark`. Its files are a copy of upstream, not more of it. (With `AT_FDCWD`, `name`
    /// is a whole path.)
    static func isMirror(_ fd: Int32, _ name: UnsafeBufferPointer<UInt8>) -> Bool {
        var info = stat()
        return [".git", ".tidemark"].allSatisfy { entry in
            (Array(name) + Array("/\(entry)".utf8) + [0]).withUnsafeBufferPointer {
                fstatat(fd, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), &info, AT_SYMLINK_NOFOLLOW) == 0
            }
        }
    }

    /// Compares a folder's files with the cached versions: a file whose stat signature is the
    /// cached ETag is unchanged (reported by position, no read needed); the others are returned,
    /// in name order.
    static func compare(_ files: FolderFiles, with cached: any CachedVersions) -> FolderScan {
        var result = FolderScan(path: files.path)
        files.names.withUnsafeBufferPointer { buffer in
            // All lookups first, then all comparisons: the table overlaps the lookups' cache misses.
            let positions = cached.positions(ofIDBytes: buffer, files.stems)
            for (index, (stem, info)) in zip(files.stems, files.infos).enumerated() {
                let id = UnsafeBufferPointer(rebasing: buffer[stem])
                let position = positions[index]
                if let position, let etag = cached.etagUTF8(at: position), StatSignature(info).matches(etag) {
                    result.unchanged.append(position)
                } else {
                    let file = files.path + "/" + String(decoding: id, as: UTF8.self) + ".json"
                    result.files.append(ListedFile(id: ItemID(bytes: Array(id)), path: file, info: info, position: position))
                }
            }
        }
        result.files.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        return result
    }
}

/// The next folder to scan, shared by the scanning tasks.
private final class FolderCounter: Sendable {
    let value = Atomic(0)
}

/// The `dir` adapter's ETag, a file's stat signature: its size, modification time, inode and
/// status-change time (what git's index also checks: a file rewritten in place with its size and
/// modification time kept, by `cp -p`, `rsync --inplace -t` or `touch -r`, still gets a new one),
/// mixed into 64 bits and written as 16 hexadecimal digits. The manifest holds one per item:
/// written out (`size-mtimeNanoseconds-inode-ctimeNanoseconds`, as before) they made 55 of its 106
/// bytes a line, and a sync rewrites, hashes and compresses the whole manifest.
struct StatSignature: CustomStringConvertible, Equatable {
    let size: Int64
    let mtime: Int64
    let inode: UInt64
    let ctime: Int64

    init(size: Int64, mtime: Int64, inode: UInt64, ctime: Int64) {
        self.size = size
        self.mtime = mtime
        self.inode = inode
        self.ctime = ctime
    }

    init(_ info: stat) {
        size = Int64(info.st_size)
        // Nanoseconds wrap past 2262 (and before 1677): a file dated there still gets a signature.
        mtime = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        inode = UInt64(info.st_ino)
        ctime = Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec)
    }

    var description: String { mixed.hexDigits }

    /// The four fields mixed into 64 bits (SplitMix64's finalizer after each), so that a change
    /// in any of them changes about half the bits.
    var mixed: UInt64 {
        func mix(_ value: UInt64) -> UInt64 {
            var z = value
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        let seed: UInt64 = 0x9e37_79b9_7f4a_7c15
        return mix(mix(mix(mix(seed ^ UInt64(bitPattern: size)) ^ UInt64(bitPattern: mtime)) ^ inode) ^ UInt64(bitPattern: ctime))
    }

    /// True when `etag` is this signature, compared without formatting one (a no-change listing
    /// of a large folder compares 100k of them). ETags of earlier versions, written out as
    /// numbers (`size-mtime-inode-ctime`, or without the status-change time before it was part
    /// of them), match on their fields: upgrading does not make every item count as changed once.
    func matches<Bytes: Collection<UInt8>>(_ stored: Bytes) -> Bool {
        let etag = ListedItem.validator(of: stored)
        var hex: UInt64 = 0
        var count = 0
        for byte in etag {
            let nibble: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return matchesFields(etag)
            }
            count += 1
            guard count <= 16 else { return false }
            hex = hex << 4 | nibble
        }
        return count == 16 && hex == mixed
    }

    /// ``matches(_:)`` for an ETag written out as numbers.
    private func matchesFields<Bytes: Collection<UInt8>>(_ etag: Bytes) -> Bool {
        var fields: (Int64, Int64, UInt64, Int64) = (0, 0, 0, 0)
        var field = 0
        var digits = 0
        for byte in etag {
            if byte == UInt8(ascii: "-") {
                guard digits > 0, field < 3 else { return false }
                field += 1
                digits = 0
                continue
            }
            guard byte >= 48, byte <= 57, digits < 19 else { return false }
            let digit = Int64(byte - 48)
            switch field {
            case 0: fields.0 = fields.0 * 10 + digit
            case 1: fields.1 = fields.1 * 10 + digit
            case 2: fields.2 = fields.2 * 10 + UInt64(digit)
            default: fields.3 = fields.3 * 10 + digit
            }
            digits += 1
        }
        guard digits > 0, fields.0 == size, fields.1 == mtime, fields.2 == inode else { return false }
        return field == 3 ? fields.3 == ctime : field == 2
    }
}
