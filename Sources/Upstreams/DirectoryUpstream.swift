import Foundation

/// The `dir` upstream: a local folder of JSON files, one item per `*.json` file.
///
/// - The id is the file name without `.json`; files may sit in subfolders (shards), but ids must
///   be unique across them.
/// - The version is the item's `lastModified` string field when present, else the file's
///   modification time in UTC.
/// - The ETag is a stat signature (size, modification time, inode), like a web server's. A file
///   whose signature matches the cached one is not read again.
///
/// Without `--collection`, the folder itself is the single collection `items`; with collections,
/// each is the subfolder of that name.
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
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UpstreamError.unreachable("upstream folder '\(location)' does not exist or is not a folder")
        }
        self.root = url
        self.spec = "dir:" + url.path
        self.collections = configuration.collections.isEmpty ? ["items"] : configuration.collections
    }

    private func folder(for collection: String) -> URL {
        collections == ["items"] && !FileManager.default.fileExists(atPath: root.appendingPathComponent("items").path)
            ? root : root.appendingPathComponent(collection, isDirectory: true)
    }

    public func list(collection: String, since: Timestamp?, cached: [ItemID: CachedVersion]) async throws -> Listing {
        let base = folder(for: collection)
        let files = try await DirectoryUpstream.walkInParallel(base.path)
        var items: [ListedItem] = []
        items.reserveCapacity(files.count)
        var seen: [ItemID: String] = [:]
        seen.reserveCapacity(files.count)
        var reads = 0
        var carried = 0
        for file in files {
            let (id, path, info) = (file.id, file.path, file.info)
            if let other = seen.updateValue(path, forKey: id) {
                throw UpstreamError.duplicateID(
                    collection: collection, item: "\(id) (\(other) and \(path))")
            }
            let mtimeNanos = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            let etag = "\(info.st_size)-\(mtimeNanos)-\(info.st_ino)"
            if let known = cached[id], known.etag == etag {
                items.append(ListedItem(id: id, lastModified: known.lastModified, etag: etag, location: path))
                continue
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw UpstreamError.unreachable("cannot read '\(path)'")
            }
            reads += 1
            let mtime = Timestamp(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int32(info.st_mtim.tv_nsec))
            let version = try DirectoryUpstream.version(of: data, collection: collection, id: id, fallback: mtime)
            // Carry bodies up to a budget, so a first clone of a large folder stays within bounded memory.
            let carry = carried + data.count <= DirectoryUpstream.bodyBudget
            if carry { carried += data.count }
            items.append(ListedItem(id: id, lastModified: version, etag: etag, body: carry ? data : nil, location: path))
        }
        return Listing(items: items, isComplete: true, requests: reads)
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        if let body = item.body { return .body(body, etag: item.etag) }
        guard let path = item.location, let data = FileManager.default.contents(atPath: path) else {
            throw UpstreamError.unreachable("\(collection)/\(item.id): no longer in the upstream folder")
        }
        return .body(data, etag: item.etag)
    }

    /// The item's version: its `lastModified` string field, else `fallback`.
    static func version(of data: Data, collection: String, id: ItemID, fallback: Timestamp) throws -> Timestamp {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw UpstreamError.malformedItem(collection: collection, item: id.description, reason: "not valid JSON")
        }
        guard let dictionary = object as? [String: Any] else {
            throw UpstreamError.malformedItem(collection: collection, item: id.description, reason: "not a JSON object")
        }
        guard let value = dictionary["lastModified"] else { return fallback }
        guard let text = value as? String else {
            throw UpstreamError.malformedItem(
                collection: collection, item: id.description, reason: "field 'lastModified' is not a string")
        }
        guard let timestamp = Timestamp(text) else {
            throw UpstreamError.malformedItem(
                collection: collection, item: id.description,
                reason: "field 'lastModified' is not a date-time: '\(text)'")
        }
        return timestamp
    }

    /// A `*.json` file found by ``walk(_:into:)``, with the `lstat` taken while walking.
    struct ListedFile: Sendable {
        let id: ItemID
        let path: String
        let info: stat
    }

    /// ``walk(_:into:)`` with the top folder's subfolders (shards) walked on all cores at once:
    /// a listing is one `lstat` per file, and the kernel serves those in parallel.
    static func walkInParallel(_ path: String) async throws -> [ListedFile] {
        var top: [ListedFile] = []
        var found: [String] = []
        try walk(path, into: &top, descend: { found.append($0) })
        let folders = found
        guard !folders.isEmpty else { return top }
        let workers = max(1, min(folders.count, ProcessInfo.processInfo.activeProcessorCount))
        let walked = try await withThrowingTaskGroup(of: [(Int, [ListedFile])].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    try stride(from: worker, to: folders.count, by: workers).map { index in
                        var files: [ListedFile] = []
                        try walk(folders[index], into: &files)
                        return (index, files)
                    }
                }
            }
            // Put each folder's files back in name order, whichever worker walked it.
            var byFolder = [[ListedFile]](repeating: [], count: folders.count)
            for try await part in group {
                for (index, files) in part { byFolder[index] = files }
            }
            return byFolder
        }
        return top + walked.joined()
    }

    /// Collects `*.json` regular files below `path` (following no symlinks), with their ids and
    /// one `lstat` each (taken relative to the open folder, so the kernel does not walk the path).
    /// With `descend`, subfolders are handed to it instead of being walked.
    static func walk(_ path: String, into files: inout [ListedFile], descend: ((String) -> Void)? = nil) throws {
        guard let dir = opendir(path) else {
            throw UpstreamError.unreachable("cannot read upstream folder '\(path)'")
        }
        defer { closedir(dir) }
        let fd = dirfd(dir)
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            if name == [46] || name == [46, 46] { continue }
            names.append(name)
        }
        names.sort { $0.lexicographicallyPrecedes($1) }
        let suffix = Array(".json".utf8)
        for name in names {
            guard let text = String(validating: name, as: UTF8.self) else {
                throw UpstreamError.unreachable(
                    "upstream folder '\(path)' holds a file name that is not UTF-8: \(String(decoding: name, as: UTF8.self))")
            }
            var info = stat()
            guard fstatat(fd, text, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let kind = info.st_mode & S_IFMT
            if kind == S_IFDIR {
                if name.first == 46 { continue }  // hidden folders are not shards
                if let descend { descend(path + "/" + text) } else { try walk(path + "/" + text, into: &files) }
            } else if kind == S_IFREG, name.count > 5, name.suffix(5).elementsEqual(suffix) {
                files.append(ListedFile(id: ItemID(bytes: Array(name.dropLast(5))), path: path + "/" + text, info: info))
            }
        }
    }
}
