import Foundation

extension Repository {
    /// Removes the temporary files objects are written through, as a process killed while
    /// writing objects leaves them: `objects/pack/tmp_tidemark_*` (a pack or its index, see
    /// ``storePack(_:index:checksum:)``), `objects/pack/pack_git2_*` (libgit2's, for a pack being
    /// indexed and the lock of its index) and `objects/tmp_object_git2_*` (a loose object). Only
    /// files modified at or after `since` go; so does `index.tidemark.tmp`, a new index not yet
    /// renamed into place, whenever it was written. Nothing reads these files, but a killed clone can
    /// leave hundreds of megabytes in them.
    ///
    /// git never uses these names; call this only when no other tidemark or libgit2 program can
    /// be writing objects into the repository (tidemark calls it holding its run lock, after a
    /// run that was killed). Returns the paths removed, relative to the git directory.
    @discardableResult
    public func removeObjectWritingLeftovers(modifiedSince since: timespec) -> [String] {
        var removed: [String] = []
        for (folder, prefix) in [("objects/pack/", "tmp_tidemark_"), ("objects/pack/", "pack_git2_"),
                                 ("objects/", "tmp_object_git2_")] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: gitDirectory + folder)) ?? []
            for name in names where name.hasPrefix(prefix) {
                let path = gitDirectory + folder + name
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                if Repository.isModified(info.st_mtim, since: since), unlink(path) == 0 { removed.append(folder + name) }
            }
        }
        // A pack a killed run renamed into place without its index.
        removed += removeOrphanPacks { Repository.isModified($0, since: since) }
        // A new index a killed run did not rename into place (``writeIndexFile(_:)``).
        if unlink(gitDirectory + Repository.indexWriteFile) == 0 {
            removed.append(Repository.indexWriteFile)
        }
        return removed
    }

    /// True when a file modified at `modified` was modified at or after `since`.
    private static func isModified(_ modified: timespec, since: timespec) -> Bool {
        modified.tv_sec > since.tv_sec || (modified.tv_sec == since.tv_sec && modified.tv_nsec >= since.tv_nsec)
    }

    /// Removes the `objects/pack/pack-<hex>.pack` files (and their `.rev`) whose `.idx` is
    /// missing and whose modification time `remove` accepts. No reader sees such a pack (git and
    /// libgit2 find packs by their index; `git count-objects` calls it garbage, `git gc` removes
    /// it). A kill between the renames that store a pack (`.pack`, then `.idx`, as git does) or
    /// the unlinks that remove one (`.idx`, then `.pack`) leaves one, as large as the pack.
    /// Returns the paths removed, relative to the git directory.
    @discardableResult
    public func removeOrphanPacks(where remove: (timespec) -> Bool) -> [String] {
        let folder = gitDirectory + "objects/pack/"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let indexes = Set(names.filter { $0.hasSuffix(".idx") }.map { $0.dropLast(4) })
        var removed: [String] = []
        for name in names where name.hasPrefix("pack-") && name.hasSuffix(".pack") && !indexes.contains(name.dropLast(5)) {
            var info = stat()
            guard lstat(folder + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG, remove(info.st_mtim),
                  unlink(folder + name) == 0 else { continue }
            removed.append("objects/pack/" + name)
            unlink(folder + name.dropLast(5) + ".rev")
        }
        return removed
    }
}
