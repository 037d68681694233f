import Foundation

extension Repository {
    /// Gives each of `paths` that is a regular file with other hard links a file of its own (a
    /// copy renamed over it), so that a checkout, which writes into the file it finds (libgit2
    /// opens it with `O_TRUNC`, or in place), cannot change the file's other names: a working tree
    /// deduplicated with hard links (`cp -al`, `jdupes -L`), another mirror's copy. Git's own
    /// checkout unlinks a file before writing it, with the same effect.
    ///
    /// A file this user may not write (read-only: `chmod a-w`) gets a writable copy the same way,
    /// as git's checkout replaces such a file instead of failing on it, also with `--force`.
    ///
    /// The copy has the same bytes and permission bits (plus the owner's write bit for a
    /// read-only file), so a safe checkout still finds the file unchanged (its stat data differs
    /// from the index, so it compares the contents).
    func separateHardLinks(_ paths: [String], workdir: String) throws(GitError) {
        // The files are looked at on all cores when there are many; copied (rarely) in order.
        let found = concurrentChunks(paths.count, parallelFrom: 256) { range in
            paths[range].compactMap { path -> (String, stat, Bool)? in
                var info = stat()
                guard lstat(workdir + path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
                // Only a file without the owner's write bit can be read-only to its owner (root writes any).
                let readOnly = info.st_mode & S_IWUSR == 0 && faccessat(AT_FDCWD, workdir + path, W_OK, AT_EACCESS) != 0
                return info.st_nlink > 1 || readOnly ? (path, info, readOnly) : nil
            }
        }
        for (path, info, readOnly) in found {
            try copyOver(workdir + path, as: info, label: path, addingWrite: readOnly)
        }
    }

    /// The mode of each of `paths` in the working tree (nil where nothing is), and for a folder
    /// whether it holds a `.git`: `lstat`s from the working tree's folder, on all cores for many.
    public func workingTreeKinds(_ paths: [String]) -> [(mode: mode_t, holdsGit: Bool)?] {
        guard let workdir else { return paths.map { _ in nil } }
        let root = Glibc.open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if root >= 0 { close(root) } }
        func lstatInTree(_ path: String, _ info: inout stat) -> Bool {
            root >= 0 ? fstatat(root, path, &info, AT_SYMLINK_NOFOLLOW) == 0 : lstat(workdir + path, &info) == 0
        }
        return concurrentChunks(paths.count, parallelFrom: 512) { range in
            range.map { index -> (mode: mode_t, holdsGit: Bool)? in
                var info = stat()
                guard lstatInTree(paths[index], &info) else { return nil }
                var inner = stat()
                return (info.st_mode, info.st_mode & S_IFMT == S_IFDIR && lstatInTree(paths[index] + "/.git", &inner))
            }
        }
    }

    /// The name a file's copy has until it is renamed over the file: `<path>.tidemark-unlink`.
    /// No item or manifest path ends so, and only one tidemark run writes at a time.
    static let hardLinkCopySuffix = ".tidemark-unlink"

    /// Removes the copies ``separateHardLinks(_:workdir:)`` left next to `paths` when its process
    /// was killed before renaming them; returns the paths of the copies removed. Call it when
    /// finishing a checkout a killed run started, with the paths still to be written (a copy's
    /// file was not written yet), and only once no folder on their way is a symbolic link: the
    /// paths are followed as they are, so a linked folder would make it remove a file elsewhere.
    @discardableResult
    public func removeHardLinkCopies(near paths: [String]) -> [String] {
        guard let workdir else { return [] }
        var removed: [String] = []
        for path in paths {
            let copy = path + Repository.hardLinkCopySuffix
            var info = stat()
            if lstat(workdir + copy, &info) == 0, info.st_mode & S_IFMT == S_IFREG, unlink(workdir + copy) == 0 {
                removed.append(copy)
            }
        }
        return removed
    }
}

/// Replaces `file` by a copy of it (same bytes and permission bits, with the owner's write bit
/// when `addingWrite`) renamed over it, unless the file changed from `before` while it was copied
/// (then an edit could be lost: nothing is renamed).
private func copyOver(_ file: String, as before: stat, label: String, addingWrite: Bool) throws(GitError) {
    let mode = before.st_mode & 0o7777 | (addingWrite ? S_IWUSR : 0)
    func failure(_ what: String) -> GitError {
        GitError(code: .generic, message: "could not give '\(label)' a file of its own before checkout (\(what)): "
                 + String(cString: strerror(errno)), operation: "checkout")
    }
    let temporary = file + Repository.hardLinkCopySuffix
    // A copy a killed run left (the next run normally removes it first).
    unlink(temporary)
    guard let contents = FileManager.default.contents(atPath: file) else { throw failure("read") }
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
    guard descriptor >= 0 else { throw failure("create") }
    let written = contents.withUnsafeBytes { writeAll(descriptor, $0) }
    // The file's permission bits as they were (open's mode is masked by the umask).
    let kept = written && fchmod(descriptor, mode) == 0
    close(descriptor)
    var after = stat()
    let unchanged = lstat(file, &after) == 0 && after.st_ino == before.st_ino && after.st_size == before.st_size
        && after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec
        && after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec == before.st_ctim.tv_nsec
    guard kept, unchanged, rename(temporary, file) == 0 else {
        let error = kept && !unchanged
            ? GitError(code: .generic, message: "'\(label)' changed while tidemark copied it; run again", operation: "checkout")
            : failure(kept ? "rename" : "write")
        unlink(temporary)
        throw error
    }
}
