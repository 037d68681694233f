import Foundation

extension DirectoryUpstream {
    /// Lists `collection` from a watcher's answer instead of a scan: every cached item whose
    /// name did not change is unchanged, and each changed name is checked (``entry(_:in:at:within:)``)
    /// in every folder of the collection that holds it, as a scan checks it: one file is the
    /// item, two are an error, none is a deletion.
    ///
    /// Nil when the answer cannot stand in for a scan of this collection: it asks for one, it
    /// comes from a watcher of another folder, the collection's folder is hidden, a link or a
    /// mirror (not watched as the scan reads it), over a quarter of the items changed, or it
    /// names a folder whose name is not UTF-8 (the scan then names it).
    public func list(collection: String, cached: some CachedVersions, changes: FolderChanges) throws -> Listing? {
        let root = folderPath
        guard let names = changes.names, changes.watches(root) else { return nil }
        let scope: [UInt8] = collections == ["items"] ? [] : Array(collection.utf8)
        // A hidden collection folder is not watched, nor is where a link in its place leads, nor
        // what a mirror holds (a scan lists a collection's folder whatever it is).
        var info = stat()
        let collectionFolder = root + "/" + collection
        guard scope.first != 46,
              scope.isEmpty || (lstat(collectionFolder, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
                                && !Array(collectionFolder.utf8).withUnsafeBufferPointer { DirectoryUpstream.isMirror(AT_FDCWD, $0) }) else {
            return nil
        }
        // Past a quarter of the items, a scan (one `fstatat` per file, folders read in order) is
        // cheaper. Up to 1,000 names pass whatever the count, and the files are checked and read
        // while the cached versions are still being read on another thread.
        var cachedVersions: (any CachedVersions)?
        if names.count > 1_000 {
            let loaded = try cached.loaded()
            guard names.count <= loaded.count / 4 else { return nil }
            cachedVersions = loaded
        }
        // Each folder is opened once, whatever number of names it holds.
        var opened: [[UInt8]: Int32] = [:]
        defer { for fd in opened.values where fd >= 0 { close(fd) } }
        var checked: [(stem: [UInt8], found: [(path: String, info: stat)])] = []
        for changed in names where DirectoryUpstream.isItemName(changed.name) {
            var found: [(path: String, info: stat)] = []
            // In the order a scan walks them (a folder before its subfolders), so that an id in
            // two folders is named as a scan names it.
            let folders = changed.folders.map { $0.split(separator: 47, omittingEmptySubsequences: false) }
                .sorted { $0.lexicographicallyPrecedes($1) { $0.lexicographicallyPrecedes($1) } }
                .map { Array($0.joined(separator: [47])) }
            for relative in folders where scope.isEmpty || relative == scope || relative.starts(with: scope + [47]) {
                guard let relative = String(validating: relative, as: UTF8.self) else { return nil }
                let folder = relative.isEmpty ? root : root + "/" + relative
                let fd = try opened[Array(relative.utf8)] ?? {
                    let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                    // Removed since the watcher answered: so are its files.
                    guard fd >= 0 || errno == ENOENT else {
                        throw UpstreamError.unreachable("cannot read upstream folder '\(CQuoting.quoted(folder))': \(String(cString: strerror(errno)))")
                    }
                    opened[Array(relative.utf8)] = fd
                    return fd
                }()
                guard fd >= 0 else { continue }
                let entry = try (changed.name + [0]).withUnsafeBufferPointer {
                    try DirectoryUpstream.entry(UnsafeBufferPointer(rebasing: $0.dropLast()), in: fd, at: folder, within: root)
                }
                if case .item(let info) = entry { found.append((folder + "/" + String(decoding: changed.name, as: UTF8.self), info)) }
            }
            checked.append((Array(changed.name.dropLast(5)), found))
        }
        // Read ahead: a file whose stat signature turns out to match its cached one is read for
        // nothing, and what reading it gave (an error too) is dropped.
        var readAhead: [[UInt8]: Result<DirectoryUpstream.ReadFile, any Error>] = [:]
        if cachedVersions == nil, !cached.isReady {
            let files = checked.compactMap { $0.found.count == 1 ? ListedFile(id: ItemID(bytes: $0.stem), path: $0.found[0].path,
                                                                               info: $0.found[0].info, position: nil) : nil }
            // One chunk (1,024 files, 32 MiB) at most: the listing reads the rest as a scan's.
            let ahead = files[..<DirectoryUpstream.chunkEnd(files, from: 0)]
            for (file, result) in zip(ahead, DirectoryUpstream.read(ahead, collection: collection)) {
                readAhead[Array(file.path.utf8)] = result
            }
        }
        let cached = try cachedVersions ?? cached.loaded()
        var decided = [Bool](repeating: false, count: cached.count)
        var unchanged: [Int] = []
        var files: [ListedFile] = []
        for (stem, found) in checked {
            let position = stem.withUnsafeBufferPointer { cached.position(ofIDBytes: $0) }
            if let position { decided[position] = true }
            guard let file = found.first else { continue }
            let id = ItemID(bytes: stem)
            if found.count > 1 { throw DirectoryUpstream.duplicate(id, found[0].path, found[1].path, collection: collection) }
            if let position, let etag = cached.etagUTF8(at: position), StatSignature(file.info).matches(etag) {
                unchanged.append(position)
            } else {
                files.append(ListedFile(id: id, path: file.path, info: file.info, position: position))
            }
        }
        for position in decided.indices where !decided[position] { unchanged.append(position) }
        files.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        let folder = scope.isEmpty ? root : collectionFolder
        return try DirectoryUpstream.listing(of: [FolderScan(path: folder, unchanged: unchanged, files: files)],
                                             collection: collection, cached: cached, readAhead: readAhead)
    }
}
