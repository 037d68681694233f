import CLibGit2
import CPackFormat
import Foundation

extension Repository {
    /// Takes git's index lock (`index.lock`, created exclusively, as git takes it) and holds it
    /// until ``releaseIndexLock()``: meanwhile `git add`, `git commit` and the like fail at once
    /// ("Unable to create '.../index.lock': File exists") instead of staging what this handle's
    /// checkout is writing. The index writes this handle makes while it holds the lock (a
    /// checkout's) hand it to libgit2 for the write and take it back when the write is done.
    ///
    /// Ctrl-C, SIGTERM, SIGHUP or SIGQUIT meanwhile removes the lock (while it still holds
    /// `token`) and the index file being written, then ends the process by that signal, as git's
    /// do: git is not locked out after an interrupted run.
    ///
    /// - Parameter token: the file's text, by which ``releaseIndexLock()`` (and a later run, when
    ///   this one is killed) knows the file is still this one: a new file can get a deleted one's
    ///   inode at once. Make it unique (a pid and a random number).
    /// - Throws: a `.locked` error when another process holds the lock.
    public func holdIndexLock(token: String) throws(GitError) {
        guard !indexLockHeld else { return }
        let path = gitDirectory + "index.lock"
        // Armed first: the handler removes the lock only once it holds the token.
        indexLockCleanupArmed = tidemark_lock_cleanup_arm(path, token, gitDirectory + Repository.indexWriteFile) == 0
        let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        // Created, the file is this handle's even before it holds the token (a signal then left
        // it behind, empty).
        if descriptor >= 0, indexLockCleanupArmed { tidemark_lock_cleanup_any(1) }
        guard descriptor >= 0 else {
            let code: GitError.Code = errno == EEXIST ? .locked : .generic
            let reason = String(cString: strerror(errno))
            disarmIndexLockCleanup()
            throw GitError(code: code,
                           message: "cannot take the index lock '\(path)': \(reason)", operation: "index.lock")
        }
        let written = Array(token.utf8).withUnsafeBytes { writeAll(descriptor, $0) }
        let reason = String(cString: strerror(errno))
        close(descriptor)
        if indexLockCleanupArmed { tidemark_lock_cleanup_any(0) }
        guard written else {
            unlink(path)
            disarmIndexLockCleanup()
            throw GitError(code: .generic, message: "cannot write the index lock '\(path)': \(reason)", operation: "index.lock")
        }
        heldIndexLock = token
    }

    private func disarmIndexLockCleanup() {
        if indexLockCleanupArmed { tidemark_lock_cleanup_disarm() }
        indexLockCleanupArmed = false
    }

    /// Removes the index lock ``holdIndexLock()`` took, if this handle still holds it: a lock
    /// file someone put in its place (after deleting it) is left alone.
    public func releaseIndexLock() {
        guard indexLockHeld else { return }
        let own = indexLockFileIsOwn
        heldIndexLock = nil
        if own { unlink(gitDirectory + "index.lock") }
        disarmIndexLockCleanup()
    }

    /// Whether this handle holds git's index lock (``holdIndexLock()``).
    var indexLockHeld: Bool { heldIndexLock != nil }

    /// Whether `index.lock` still holds this handle's token: someone may have deleted it, and
    /// another process taken the lock since.
    private var indexLockFileIsOwn: Bool {
        guard let token = heldIndexLock else { return false }
        return leadingBytes(of: gitDirectory + "index.lock", limit: 128)?.elementsEqual(token.utf8) == true
    }

    /// Writes `index` to its file, handing the held index lock (if any) to libgit2 for the write
    /// (it takes `index.lock` itself) and taking it back once the index is renamed into place.
    /// Another process could take the lock in the moment between: this handle then no longer
    /// holds it, and leaves it alone. A lock that is no longer this handle's (deleted and taken
    /// by another process) stays, and libgit2's write then fails.
    func writeIndex(_ index: OpaquePointer) throws(GitError) {
        let permissions = indexPermissions
        try handingOverIndexLock { () throws(GitError) in
            do throws(GitError) {
                try checkCall(Repository.indexWrite) { git_index_write(index) }
            } catch where error.code == .locked {
                throw indexLockTaken()
            }
        }
        // The new file keeps the old one's permissions, as ``writeIndexFile(_:)``'s does.
        if let permissions { chmod(gitDirectory + "index", permissions) }
    }

    /// The index file's permission bits, which a new index file keeps (group ones under
    /// `core.sharedRepository`, say, where a new file would get the umask's); nil when there is
    /// no index yet.
    private var indexPermissions: mode_t? {
        var info = stat()
        return stat(gitDirectory + "index", &info) == 0 ? info.st_mode & 0o777 : nil
    }

    /// What an index write reports as its operation.
    private static let indexWrite = "writing the index (.git/index)"

    /// Runs `body`, an index write that takes `index.lock` itself, with the lock this handle holds
    /// (if any) released, and takes it back after.
    private func handingOverIndexLock(_ body: () throws(GitError) -> Void) throws(GitError) {
        let token = heldIndexLock
        if token != nil { releaseIndexLock() }
        defer { if let token { try? holdIndexLock(token: token) } }
        // Meanwhile the lock libgit2 takes is this process's: a SIGTERM removes it, as ours
        // (it was left behind).
        let armed = token != nil && tidemark_lock_cleanup_arm(gitDirectory + "index.lock", nil, nil) == 0
        defer { if armed { tidemark_lock_cleanup_disarm() } }
        try body()
    }

    /// The error of an index write that found `index.lock` taken.
    private func indexLockTaken() -> GitError {
        GitError(code: .locked, message: "cannot write the index: '\(gitDirectory)index.lock' exists (another git "
                 + "process holds it, or one that crashed left it)", operation: Repository.indexWrite)
    }
}

extension Repository {
    /// Writes `splice` as the index. Holding the index lock, this handle writes a file of its own
    /// (`index.tidemark.tmp`, created anew) and renames it over `index`: the lock stays taken
    /// throughout, where a hand-over to libgit2's write (``writeIndex(_:)``) leaves a moment in
    /// which another process can take it. Before writing and before the rename the lock file must
    /// still hold this handle's token; a lock someone else took is reported as taken. Not holding
    /// it, this handle takes it as libgit2 would (`index.lock` created exclusively) and writes
    /// through it. Either way the file is fsynced
    /// when fsync is on, renamed over `index`, and its folder fsynced. The pieces are written
    /// (`writev`, no copy of the 9 MB a 100k-file index holds) while another thread computes the
    /// checksum, which goes last.
    func writeIndexFile(_ splice: IndexFileSplice) throws(GitError) {
        indexFileCache = nil
        let held = indexLockHeld
        let temporary = gitDirectory + (held ? Repository.indexWriteFile : "index.lock")
        try splice.withBuffers { buffers in Result { () throws(GitError) in
            // The lock file must still be the one this handle took: else the index is another's to write.
            if held, !indexLockFileIsOwn { throw indexLockTaken() }
            // What a killed run left under the temporary name goes first (a link too, not followed).
            if held { unlink(temporary) }
            let descriptor = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            guard descriptor >= 0 else {
                if !held, errno == EEXIST { throw indexLockTaken() }
                throw GitError(code: .generic, message: "cannot create '\(temporary)': \(String(cString: strerror(errno)))",
                               operation: Repository.indexWrite)
            }
            if let permissions = indexPermissions { fchmod(descriptor, permissions) }
            nonisolated(unsafe) let buffers = buffers
            nonisolated(unsafe) var checksum: [UInt8] = []
            nonisolated(unsafe) var written = false
            nonisolated(unsafe) var writeError: Int32 = 0
            DispatchQueue.concurrentPerform(iterations: 2) { task in
                if task == 0 {
                    checksum = IndexFileSplice.checksum(buffers)
                } else {
                    written = writeAll(descriptor, buffers)
                    writeError = errno
                }
            }
            if written { written = checksum.withUnsafeBytes { writeAll(descriptor, $0) } } else { errno = writeError }
            if written, Library.fsyncEnabled { written = fsync(descriptor) == 0 }
            let reason = String(cString: strerror(errno))
            if close(descriptor) != 0 { written = false }
            if written, held, !indexLockFileIsOwn {
                unlink(temporary)
                throw indexLockTaken()
            }
            guard written, rename(temporary, gitDirectory + "index") == 0 else {
                let failure = written ? String(cString: strerror(errno)) : reason
                unlink(temporary)
                throw GitError(code: .generic, message: "cannot write the index '\(gitDirectory)index': \(failure)",
                               operation: Repository.indexWrite)
            }
            // As libgit2 does for its index write; a failure here is not the write's.
            if Library.fsyncEnabled { try? Repository.fsyncFolder(gitDirectory) }
        } }.get()
    }

    /// The file a handle holding the index lock writes a new index into before renaming it over
    /// `index` (git never uses the name).
    static let indexWriteFile = "index.tidemark.tmp"
}
