import Foundation
import GitStore

/// git lock files that tidemark itself may leave behind when it is killed (SIGKILL gives libgit2
/// no chance to remove them). Before writing a ref or the index, a run notes it in
/// `.git/tidemark/locks` (`ref <name> <new id> <pid>` or `index - - <pid>`); the next run, holding
/// the run lock, removes a lock file only when that note names it, its pid is gone and, for a
/// ref, the lock holds nothing or the id that run was writing. Any other lock file is reported by
/// name and left alone (``MirrorError/gitLocked(_:)``).
extension Mirror {
    static let locksNote = "locks"

    /// Runs `body`, noting first which git lock file it may create.
    func withLockNote<R>(ref name: String? = nil, target: ObjectID? = nil,
                         _ body: () throws(MirrorError) -> R) throws(MirrorError) -> R {
        let note = name.map { "ref \($0) \(target?.hex ?? "-") \(getpid())\n" } ?? "index - - \(getpid())\n"
        try writeState(Mirror.locksNote, note)
        // Also after an error: libgit2 then removed its own lock, or the lock was someone else's.
        defer { removeState(Mirror.locksNote) }
        return try body()
    }

    /// Waits while `held()` is true, looking every 20 ms for at most `seconds` (a second: git
    /// waits 100 ms for a ref lock by default); true when it stopped being so.
    static func waitBriefly(seconds: Double = 1, while held: () -> Bool) -> Bool {
        for _ in 0..<Int(seconds * 50) {
            guard held() else { return true }
            usleep(20_000)
        }
        return !held()
    }

    /// The note of the index lock a sync holds from its checkout to its branch update
    /// (``withIndexLockHeld(_:)``), kept apart from ``locksNote``, which the steps between use.
    static let heldIndexLockNote = "index-lock"

    /// Runs `body` holding git's index lock, as git holds it while it updates the working tree
    /// and index: a `git commit -a` meanwhile fails at once ("index.lock: File exists") instead
    /// of committing the files the sync is writing onto the branch it is about to move.
    func withIndexLockHeld<R>(_ body: () throws(MirrorError) -> R) throws(MirrorError) -> R {
        // Noted before the lock exists, with the text it will hold, so that the next run removes
        // a lock this one left only while it still holds that text (see ``removeOwnStaleGitLock()``).
        let nonce = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        try writeState(Mirror.heldIndexLockNote, "index - \(nonce) \(getpid())\n")
        defer {
            repository.releaseIndexLock()
            removeState(Mirror.heldIndexLockNote)
        }
        // git holds the lock a few milliseconds at a time (`git status` refreshing its index,
        // as a shell prompt may run it every second): waited for, up to a second, like ref locks.
        let token = Mirror.indexLockToken(pid: getpid(), nonce: nonce)
        var failure: GitError?
        _ = Mirror.waitBriefly {
            do throws(GitError) {
                try repository.holdIndexLock(token: token)
                failure = nil
                return false
            } catch {
                failure = error
                return error.code == .locked
            }
        }
        if let failure {
            if failure.code == .locked { throw .gitLocked(gitDirectory + "index.lock") }
            throw .git(failure)
        }
        return try body()
    }

    /// The text of the index lock a run holds: `tidemark <pid> <nonce>`.
    static func indexLockToken(pid: Int32, nonce: String) -> String { "tidemark \(pid) \(nonce)\n" }

    /// Removes the lock files a killed tidemark run left, as described by its notes: a ref lock
    /// holding nothing or the id that run was writing, an index lock libgit2 was writing for it,
    /// or the index lock it held, only while that still holds its text (a user who removed it,
    /// as git's message says, may have started a `git commit` that holds a lock of its own).
    func removeOwnStaleGitLock() {
        for name in [Mirror.locksNote, Mirror.heldIndexLockNote] { removeStaleGitLock(notedIn: name) }
        removeKilledStatusIndexLock()
    }

    /// Removes the index lock a killed `tidemark status` held while it recorded stat data (it
    /// takes no run lock, so it notes nothing): its text names it
    /// (``Repository/statusIndexLockHolder(_:)``), and a process gone.
    private func removeKilledStatusIndexLock() {
        let path = gitDirectory + "index.lock"
        guard let data = FileManager.default.contents(atPath: path), let pid = Repository.statusIndexLockHolder(data),
              pid != getpid() else { return }
        // A status running now holds it a moment, then removes it and goes on.
        let unchanged = { FileManager.default.contents(atPath: path) == data }
        _ = Mirror.waitBriefly(seconds: 2, while: { unchanged() && RunLock.isLiving(pid) })
        guard !RunLock.isLiving(pid), unchanged() else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    private func removeStaleGitLock(notedIn name: String) {
        guard let note = readState(name) else { return }
        defer { removeState(name) }
        let fields = note.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        // A killed run can outlive the run lock it held for a moment: it is a zombie until its
        // parent reaps it, or still exiting (GNU `timeout -s KILL` kills itself along with it,
        // and init reaps the child later); such a lock stayed for good. This run holds the run
        // lock, so that process runs no tidemark code any more: a zombie counts as gone, one
        // still exiting is waited for (2 s at most). One still running is another's: its lock is
        // left alone (the error this run meets at it names it).
        guard fields.count == 4, let pid = Int32(fields[3]), pid != getpid(),
              Mirror.waitBriefly(seconds: 2, while: { RunLock.isLiving(pid) }) else { return }
        let path = gitDirectory + (fields[0] == "ref" ? fields[1] + ".lock" : "index.lock")
        guard let data = FileManager.default.contents(atPath: path) else { return }
        if fields[0] == "ref" {
            let content = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard content.isEmpty || content == fields[2] else { return }
        } else if fields[2] != "-" {
            guard data == Data(Mirror.indexLockToken(pid: pid, nonce: fields[2]).utf8) else { return }
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}
